"""Pure text parsers for files kfdguard reads from a machine.

Each takes the text of one file and returns what it could make of it plus a
list of complaints about lines it could not; none raises on odd input.
"""
