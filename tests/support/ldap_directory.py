"""An LDAP directory for the sign-in tests: OpenLDAP's slapd (Debian's ``slapd``, installed by
``./run test``), started by the test on a loopback port with a directory of its own, the
``memberOf`` overlay on (what FAB's group mapping reads), and people and groups loaded with
``ldapadd``. Stopped by its own pid."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.environment import free_port

SUFFIX = "dc=archive,dc=test"
ADMIN_DN = f"cn=admin,{SUFFIX}"
ADMIN_PASSWORD = "directory-admin"
SCHEMAS = ("core", "cosine", "inetorgperson", "nis")


@dataclass(frozen=True)
class Directory:
    url: str
    people: str  # the base of the users' entries
    groups: str  # the base of the groups' entries

    def user_dn(self, uid: str) -> str:
        return f"uid={uid},{self.people}"

    def group_dn(self, name: str) -> str:
        return f"cn={name},{self.groups}"


def _config(root: Path, port: int) -> Path:
    (root / "db").mkdir(parents=True)
    lines = [f"include /etc/ldap/schema/{name}.schema" for name in SCHEMAS]
    lines += [
        "modulepath /usr/lib/ldap",
        "moduleload back_mdb",
        "moduleload memberof",
        f"pidfile {root / 'slapd.pid'}",
        f"argsfile {root / 'slapd.args'}",
        "database mdb",
        "maxsize 10485760",
        f'suffix "{SUFFIX}"',
        f'rootdn "{ADMIN_DN}"',
        f"rootpw {ADMIN_PASSWORD}",
        f"directory {root / 'db'}",
        "overlay memberof",
        "memberof-group-oc groupOfNames",
        "memberof-member-ad member",
        "memberof-memberof-ad memberOf",
        "memberof-refint true",
    ]
    conf = root / "slapd.conf"
    conf.write_text("\n".join(lines) + "\n")
    return conf


def _ldif(people: dict[str, str], groups: dict[str, list[str]], d: Directory) -> str:
    entries = [
        f"dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\no: archive\ndc: archive",
        f"dn: {d.people}\nobjectClass: organizationalUnit\nou: people",
        f"dn: {d.groups}\nobjectClass: organizationalUnit\nou: groups",
    ]
    for uid, password in people.items():
        entries.append(
            f"dn: {d.user_dn(uid)}\nobjectClass: inetOrgPerson\nuid: {uid}\ncn: {uid.title()}"
            f"\nsn: {uid.title()}\ngivenName: {uid.title()}\nmail: {uid}@archive.test"
            f"\nuserPassword: {password}"
        )
    for name, members in groups.items():
        lines = [f"dn: {d.group_dn(name)}", "objectClass: groupOfNames", f"cn: {name}"]
        lines += [f"member: {d.user_dn(uid)}" for uid in members]
        entries.append("\n".join(lines))
    return "\n\n".join(entries) + "\n"


@contextmanager
def ldap_directory(
    root: Path, people: dict[str, str], groups: dict[str, list[str]]
) -> Iterator[Directory]:
    """slapd serving ``people`` (uid: password) and ``groups`` (name: member uids)."""
    slapd = shutil.which("slapd") or "/usr/sbin/slapd"
    port = free_port()
    url = f"ldap://127.0.0.1:{port}"
    d = Directory(url, f"ou=people,{SUFFIX}", f"ou=groups,{SUFFIX}")
    conf = _config(root, port)
    proc = subprocess.Popen(
        [slapd, "-f", str(conf), "-h", url + "/", "-d", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            probe = subprocess.run(
                ["ldapsearch", "-x", "-H", url, "-b", "", "-s", "base", "namingContexts"],
                capture_output=True, text=True,
            )  # fmt: skip
            if probe.returncode == 0:
                break
            assert proc.poll() is None, (
                f"slapd stopped: {proc.stderr.read() if proc.stderr else ''}"
            )
            assert time.monotonic() < deadline, f"slapd did not answer: {probe.stderr}"
            time.sleep(0.2)
        added = subprocess.run(
            ["ldapadd", "-x", "-H", url, "-D", ADMIN_DN, "-w", ADMIN_PASSWORD],
            input=_ldif(people, groups, d), capture_output=True, text=True,
        )  # fmt: skip
        assert added.returncode == 0, added.stderr
        yield d
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
