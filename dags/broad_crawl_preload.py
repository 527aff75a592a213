"""# Broad-crawl preload (Airflow DAG)

Prepares the annual snapshot (the BnF's NAS_preload): domain lists from several sources, each
tagged with its origin, are normalised (IDN → punycode, registrable domain through the bundled
public-suffix list), de-duplicated (rejected lines go to a rejects file with line number and
reason), DNS-checked in parallel chunks (active / failed / unknown — only "failed" excludes a
domain), probed for redirects to other registrable domains (which are added and checked in
turn), then transferred: new domains get the broad default configuration and four seeds,
domains whose DNS failed are made inactive with the reason. Manual trigger, yearly.
Re-running resumes: DNS results already stored for the run are not asked again.

## How to check it's working
1. Trigger with your `sources` (the demo's lists are in app/demo/data/); for loopback demos set `hosts_file` so no real DNS is asked.
2. The `collect` task log gives per-source lines/valid/unique/new; each `dns_check` task logs
   its progress and class counts; `report` ends with the transferred/inactivated figures.
3. `harvestflow domain show <domain>` shows a transferred domain with its seeds.
"""

from typing import Any

from airflow.sdk import DAG, get_current_context, task

from hf_common import NETWORK_RETRIES, dag_args, form_param, task_logger

with DAG(
    dag_id="broad_crawl_preload",
    schedule=None,
    doc_md=__doc__,
    params={
        "run_id": form_param(
            None,
            type=["null", "string"],
            pattern="^[A-Za-z0-9._-]+$",
            description="Preload run name (default: the Airflow run's date); re-use it to resume.",
        ),
        "sources": form_param(
            [],
            type="array",
            description=(
                'Sources, e.g. [{"name": "afnic", "kind": "registry", "path": "/data/afnic.txt"},'
                ' {"name": "library", "kind": "url_list", "path": "/data/urls.txt"},'
                ' {"name": "db", "kind": "harvest_db"}, {"name": "sel", "kind": "selections"}].'
                " The demo lists are in app/demo/data/."
            ),
        ),
        "nameservers": form_param(
            [], type="array", items={"type": "string"}, description="host[:port] DNS servers"
        ),
        "hosts_file": form_param(
            None, type=["null", "string"], description="hosts file answered without DNS (demo)"
        ),
        "connect_to": form_param(
            None,
            type=["null", "string"],
            description="host:port every redirect probe goes to (demo)",
        ),
    },
    **dag_args("preload", "broad-crawl"),
) as dag:

    def _run_id(context: Any) -> str:
        return context["params"].get("run_id") or context["dag_run"].run_after.strftime(
            "preload-%Y%m%d"
        )

    @task
    def collect() -> dict[str, Any]:
        from harvest.pipeline import collect_sources

        context = get_current_context()
        sources = context["params"].get("sources")
        if not sources:
            raise ValueError(
                "no sources given: set the `sources` param, e.g. "
                '[{"name": "afnic", "kind": "registry", "path": "/data/domains.txt"}]'
            )
        report = collect_sources(_run_id(context), sources)
        for src in report["sources"]:
            task_logger().info("source %s", src)
        return report

    @task
    def chunks(report: dict[str, Any]) -> list[str]:
        return list(report["chunks"])

    @task(**NETWORK_RETRIES)
    def dns_check(chunk_path: str) -> dict[str, Any]:
        from harvest.pipeline import dns_check_chunk

        context = get_current_context()
        params = context["params"]
        return dns_check_chunk(
            _run_id(context),
            chunk_path,
            nameservers=params.get("nameservers") or None,
            hosts_file=params.get("hosts_file"),
        )

    @task(trigger_rule="all_success", **NETWORK_RETRIES)
    def redirects(results: list[dict[str, Any]]) -> dict[str, Any]:
        from harvest.pipeline import probe_redirects

        context = get_current_context()
        params = context["params"]
        return probe_redirects(
            _run_id(context),
            connect_to=params.get("connect_to"),
            hosts_file=params.get("hosts_file"),
            nameservers=params.get("nameservers") or None,
        )

    @task
    def transfer(redirect_report: dict[str, Any]) -> dict[str, Any]:
        from harvest.pipeline import ensure_reference_data, transfer_domains

        ensure_reference_data()  # the broad default template new domains get
        return transfer_domains(_run_id(get_current_context()))

    @task
    def report(transfer_report: dict[str, Any]) -> dict[str, Any]:
        from harvest.pipeline import preload_report

        final = preload_report(_run_id(get_current_context()))
        task_logger().info("preload report: %s", final)
        return final

    collected = collect()
    report(transfer(redirects(dns_check.expand(chunk_path=chunks(collected)))))
