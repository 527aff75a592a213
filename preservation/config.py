"""Preservation settings read once from the ``[preservation]`` section, with safe defaults.

Why a dataclass: the ingest code passes one small immutable object around instead of looking
keys up in many places, and a missing key in an older settings file falls back to the default
here rather than failing in the middle of an upload.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from harvestflow.settings import Settings, get_settings


@dataclass(frozen=True)
class PreservationConfig:
    naan: str = "99999"
    shoulder: str = "hf"
    # share of data files fully re-read after upload (0..1); metadata and tag files always are
    verify_sample_rate: float = 1.0
    multipart_threshold: int = 64 * 1024 * 1024
    part_size: int = 8 * 1024 * 1024
    upload_threads: int = 8
    # files hashed in parallel while staging (sha256 + sha512 + part checksums)
    staging_threads: int = 2
    delete_local_after_verify: bool = False
    remove_staging_after_ingest: bool = True
    retry_attempts: int = 8
    retry_base_delay_s: float = 1.0
    retry_max_delay_s: float = 30.0
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 60.0
    staging_subdir: str = "preservation/staging"
    reports_subdir: str = "preservation/reports"
    key_prefix: str = "packages"
    organisation: str = "harvestflow"
    progress_interval_s: float = 10.0
    # fixity audits: every preserved file is re-read in every copy at least once per period;
    # each daily run reads at least this share of them, the oldest-verified first
    audit_period_days: int = 365
    audit_share_per_day: float = 0.003

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> PreservationConfig:
        settings = settings or get_settings()
        section: dict[str, Any] = dict(settings.data.get("preservation", {}))
        known = {f.name: f for f in fields(cls)}
        values: dict[str, Any] = {}
        for name, field in known.items():
            if name in section:
                default: Any = field.default
                values[name] = type(default)(section[name])
        if "organisation" not in section:
            org = settings.get("crawler", "organisation")
            if org:
                values["organisation"] = str(org)
        if "progress_interval_s" not in section:
            interval = settings.get("airflow", "progress_interval_s")
            if interval is not None:
                values["progress_interval_s"] = float(interval)
        cfg = cls(**values)
        if not 0.0 <= cfg.verify_sample_rate <= 1.0:
            raise ValueError(
                "[preservation] verify_sample_rate must be within 0..1,"
                f" not {cfg.verify_sample_rate}"
            )
        if not 0.0 <= cfg.audit_share_per_day <= 1.0:
            raise ValueError(
                "[preservation] audit_share_per_day must be within 0..1,"
                f" not {cfg.audit_share_per_day}"
            )
        if cfg.audit_period_days < 1:
            raise ValueError(
                f"[preservation] audit_period_days must be 1 or more, not {cfg.audit_period_days}"
            )
        if cfg.part_size < 5 * 1024 * 1024:
            raise ValueError("[preservation] part_size must be at least 5 MiB (S3's minimum part)")
        return cfg

    def staging_root(self, settings: Settings) -> Path:
        return settings.path(*self.staging_subdir.split("/"))

    def reports_root(self, settings: Settings) -> Path:
        return settings.path(*self.reports_subdir.split("/"))
