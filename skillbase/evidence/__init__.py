"""skillbase.evidence"""
