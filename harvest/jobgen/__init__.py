"""Job generation: splitting a harvest definition's domain configurations into crawl jobs.

NetarchiveSuite's two generators (its ``DefaultJobGenerator`` and
``FixedDomainConfigurationCountJobGenerator``): :mod:`harvest.jobgen.default` (size
expectations from the harvest history) and :mod:`harvest.jobgen.fixed` (a fixed number of
domains per job). Both consume configurations as a stream and work chunk by chunk, so memory
stays bounded whatever the size of the harvest.
"""
