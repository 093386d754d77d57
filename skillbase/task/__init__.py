"""skillbase.task"""
