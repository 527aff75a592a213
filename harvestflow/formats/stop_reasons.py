"""Why a domain's harvest in a job stopped: NetarchiveSuite's StopReason, plus the operator's.

Why one home: the crawler writes these codes in summary.json, the harvest DB keeps them in
``historyinfo.stopreason`` (job generation reads them back), the curator pages and QA show
them. Codes 0-6 are NetarchiveSuite's (its ``StopReason`` enum, same numbers);
:data:`STOPPED_BY_OPERATOR` (7) is harvestflow's: the job was stopped by an operator
(``harvestflow jobs stop``) while the domain still had URLs queued.
"""

from __future__ import annotations

COMPLETE, OBJECT_LIMIT, SIZE_LIMIT, CONFIG_SIZE_LIMIT = 0, 1, 2, 3
UNFINISHED, CONFIG_OBJECT_LIMIT, TIME_LIMIT = 4, 5, 6
STOPPED_BY_OPERATOR = 7

# the enum's names (NetarchiveSuite's, and ours for 7)
NAMES = {
    COMPLETE: "DOWNLOAD_COMPLETE",
    OBJECT_LIMIT: "OBJECT_LIMIT",
    SIZE_LIMIT: "SIZE_LIMIT",
    CONFIG_SIZE_LIMIT: "CONFIG_SIZE_LIMIT",
    UNFINISHED: "DOWNLOAD_UNFINISHED",
    CONFIG_OBJECT_LIMIT: "CONFIG_OBJECT_LIMIT",
    TIME_LIMIT: "TIME_LIMIT",
    STOPPED_BY_OPERATOR: "STOPPED_BY_OPERATOR",
}
# words for reports and pages
TEXT = {
    COMPLETE: "complete",
    OBJECT_LIMIT: "object limit",
    SIZE_LIMIT: "size limit",
    CONFIG_SIZE_LIMIT: "config size limit",
    UNFINISHED: "unfinished",
    CONFIG_OBJECT_LIMIT: "config object limit",
    TIME_LIMIT: "time limit",
    STOPPED_BY_OPERATOR: "stopped by operator",
}
# a limit (not the site's end, a failure or an operator) ended the domain's harvest
LIMITS = frozenset({OBJECT_LIMIT, SIZE_LIMIT, CONFIG_SIZE_LIMIT, CONFIG_OBJECT_LIMIT, TIME_LIMIT})
