"""skillbase.harness"""
