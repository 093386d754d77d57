"""skillbase.commands"""
