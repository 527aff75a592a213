"""FAB's configuration file when ``[airflow] auth = "ldap"`` (``[fab] config_file``).

FAB executes this file and keeps its upper-case names: they are made from the harvestflow
settings by :func:`app.runtime.ldap_auth.fab_config`, so the directory is configured in
``config/harvestflow.toml`` (or ``HARVESTFLOW_AIRFLOW__LDAP_*``) like everything else.
"""

from app.runtime.ldap_auth import fab_config
from harvestflow.settings import get_settings

globals().update(fab_config(get_settings()))
