"""python3 -m kjudge_harness <role> <request.json> <report.json>

Roles: pch, build, candidate (the reference runs in the resident trusted worker, kjudge_worker). The report is written even when the role fails (ok=false,
the stage it reached, the error); a role that cannot write it was killed, and the daemon reads
that from the sandbox's own report."""
import sys

from . import phases  # first: its clock starts before torch is imported
from . import protocol


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    role, request_path, report_path = argv[1:]
    report = {"ok": False, "role": role, "stage": "start"}
    request = {}
    try:
        request = protocol.read_request(request_path)
        if role == "pch":
            from . import pch as impl
        elif role == "build":
            from . import build as impl
        elif role == "candidate":
            from . import candidate as impl
        else:
            raise ValueError(f"unknown role '{role}'")
        phases.mark("import")
        impl.run(request, report)
    except BaseException as exc:  # noqa: BLE001 - everything the role raised goes into the report
        report["ok"] = False
        report["error"] = protocol.error_text(exc)
        report["error_type"] = type(exc).__name__
        try:  # the candidate's view of it (message, feedback): never the judge's frames or paths
            from .diagnosis import diagnose
            report.update(diagnose(exc, request.get("candidate_path")))
        except Exception as inner:  # noqa: BLE001 - the report must still be written
            report["diagnosis_error"] = repr(inner)
    phases.mark("rest")
    report["phase_seconds"] = phases.seconds
    protocol.write_report(report_path, report)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
