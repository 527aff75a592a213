"""Access to the archive: the replay service (pywb as a separate program), its ZipNum indexes and
WARC resolution. pywb is GPL-3.0 and never imported here: it is started as a program."""

# an access rule's policies (access.rules); here, not in .rules, so that the command line lists
# them without importing the rules module (and SQLAlchemy)
POLICIES = ("allow", "block", "exclude", "open")
