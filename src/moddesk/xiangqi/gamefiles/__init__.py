"""Game records: PGN (Chinese, WXF, ICCS), UBB/DhtmlXQ and XQF read and written, and games
started or reviewed from a record.
"""
