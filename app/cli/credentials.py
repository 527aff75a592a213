"""``harvestflow credentials set|list|remove``: the logins the crawler uses (harvestflow/credentials).

The password is never an argument (it would show in ``ps`` and shell history): it is asked
for without echo, or read from standard input with ``--password-stdin``. Nothing printed here
contains it; ``list`` shows everything but the username and password.
"""

from __future__ import annotations

import argparse
import getpass
import sys


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "credentials", help="logins for crawling behind HTTP auth or a login form"
    )
    sub = p.add_subparsers(dest="credentials_command", required=True)
    s = sub.add_parser("set", help="store (or replace) the credential of a domain or host")
    s.add_argument("domain", help="registrable domain or host the login is for")
    s.add_argument("--kind", choices=["basic", "digest", "form"], required=True)
    s.add_argument("--username", required=True)
    s.add_argument(
        "--password-stdin", action="store_true", help="read the password from standard input"
    )
    s.add_argument("--definition", type=int, default=None, help="only this harvest definition")
    s.add_argument("--secret-id", default=None, help="the crawl feed's secretId naming it")
    s.add_argument("--realm", default=None, help="basic/digest: only this realm")
    s.add_argument("--login-url", default=None, help="form: the page holding the login form")
    s.add_argument("--logout-url", default=None, help="never fetched during the crawl")
    s.add_argument("--username-field", default=None, help="form: input name (default: found)")
    s.add_argument("--password-field", default=None, help="form: input name (default: found)")
    s.set_defaults(func=cmd_set)
    ls = sub.add_parser("list", help="stored credentials (never their secret)")
    ls.set_defaults(func=cmd_list)
    rm = sub.add_parser("remove", help="delete a credential by id")
    rm.add_argument("id", type=int)
    rm.set_defaults(func=cmd_remove)


def cmd_set(args: argparse.Namespace) -> int:
    from harvestflow.credentials import CredentialError, set_credential

    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = getpass.getpass(f"password for {args.username} on {args.domain}: ")
    if not password:
        print("harvestflow credentials: empty password, nothing stored", file=sys.stderr)
        return 2
    try:
        cid = set_credential(
            args.domain,
            args.kind,
            args.username,
            password,
            harvest_id=args.definition,
            secret_id=args.secret_id,
            realm=args.realm,
            login_url=args.login_url,
            logout_url=args.logout_url,
            username_field=args.username_field,
            password_field=args.password_field,
        )
    except CredentialError as exc:
        print(f"harvestflow credentials: {exc}", file=sys.stderr)
        return 2
    print(f"credential {cid} stored for {args.domain} ({args.kind})")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from harvestflow.credentials import list_credentials

    rows = list_credentials()
    if not rows:
        print("no credentials")
    for r in rows:
        scope = f"definition {r['harvest_id']}" if r["harvest_id"] else "all definitions"
        extra = " ".join(
            f"{k}={r[k]}" for k in ("realm", "login_url", "logout_url", "secret_id") if r[k]
        )
        print(f"{r['id']:>5}  {r['domain']}  {r['kind']}  {scope}  {extra}".rstrip())
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    from harvestflow.credentials import remove_credential

    if not remove_credential(args.id):
        print(f"harvestflow credentials: no credential {args.id}", file=sys.stderr)
        return 1
    print(f"credential {args.id} removed")
    return 0
