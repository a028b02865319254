"""SMT-LIB2 certificates: every catalog query as a file anyone can replay with any solver.

Each file holds one query: the preconditions and the *negated* property. Its
``(set-info :status ...)`` line says what a solver must answer: ``unsat`` for a proved
obligation, ``sat`` for a refuted one. A header of comments states the obligation, the
convention and the z3 version that wrote it.

:func:`write_certificates` (``verispec smt --write-certificates``) regenerates the folder;
:func:`check_certificates` (run in CI) replays every file with z3, checks its status, and,
when the installed z3 is the version that wrote the file, checks that the file is current.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from verispec.smt.catalog import CatalogResult, run_catalog
from verispec.smt.obligations import OBLIGATIONS
from verispec.verdicts import VerdictKind

__all__ = ["CertificateProblem", "certificate_files", "check_certificates", "write_certificates"]

#: Where the certificates live in the repository.
DEFAULT_FOLDER = Path("proofs") / "smt"


def _slug(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", label.lower())


def certificate_files(result: CatalogResult) -> dict[str, str]:
    """File name -> text for one catalog result (one file per query that was run)."""
    import z3  # deferred: heavy

    entry, texts = result.entry, result.result.smt2
    verdict = result.result.verdict.kind
    labels = _labels(entry.obligation, len(texts))
    out = {}
    for i, (label, text) in enumerate(zip(labels, texts, strict=True)):
        last = i == len(texts) - 1
        status = "sat" if (verdict == VerdictKind.REFUTED and last) else "unsat"
        if verdict == VerdictKind.UNKNOWN:
            status = "unknown"
        name = f"{entry.name}.smt2" if len(texts) == 1 and not label else f"{entry.name}-{_slug(label)}.smt2"
        header = [
            f"; verispec certificate: {entry.name}",
            f"; obligation: {entry.obligation}: {OBLIGATIONS[entry.obligation].statement}",
            f"; convention: {entry.convention} ({entry.source})",
            *([f"; case: {label}"] if label else []),
            f"; this query asserts the preconditions and the negated property: {status} means "
            + ("the obligation holds" if status == "unsat" else "a counterexample exists"),
            f"; written by z3 {z3.get_version_string()}",
        ]
        body = text.replace("(set-info :status unknown)", f"(set-info :status {status})")
        out[name] = "\n".join(header) + "\n" + body
    return out


def _labels(obligation: str, count: int) -> list[str]:
    if obligation in ("tree-visibility", "tree-positions"):
        return [f"{n} nodes" for n in range(2, 2 + count)]
    if obligation.startswith("compaction-") and obligation != "compaction-step":
        return [f"path of {n}" for n in range(2, 2 + count)]
    return [""] * count


def write_certificates(folder: str | Path = DEFAULT_FOLDER) -> list[Path]:
    """Regenerate every certificate in ``folder`` (stale ``.smt2`` files are removed)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    wanted: dict[str, str] = {}
    for result in run_catalog():
        wanted.update(certificate_files(result))
    for old in folder.glob("*.smt2"):
        if old.name not in wanted:
            old.unlink()
    for name, text in sorted(wanted.items()):
        path = folder / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


@dataclass(frozen=True)
class CertificateProblem:
    file: str
    problem: str


def _replay(text: str) -> str:
    import z3  # deferred: heavy

    solver = z3.Solver()
    solver.set("timeout", 60_000)
    solver.add(z3.parse_smt2_string(text))
    return str(solver.check())


def check_certificates(
    folder: str | Path = DEFAULT_FOLDER, *, replay: bool = True
) -> list[CertificateProblem]:
    """Every problem with the certificates in ``folder``; an empty list means all is well."""
    import z3  # deferred: heavy

    folder = Path(folder)
    problems: list[CertificateProblem] = []
    wanted: dict[str, str] = {}
    for result in run_catalog():
        wanted.update(certificate_files(result))
    present = {p.name: p for p in folder.glob("*.smt2")} if folder.is_dir() else {}
    version = z3.get_version_string()
    for name, text in sorted(wanted.items()):
        path = present.get(name)
        if path is None:
            problems.append(CertificateProblem(name, "missing: run verispec smt --write-certificates"))
            continue
        on_disk = path.read_text(encoding="utf-8")
        written_by = re.search(r"^; written by z3 (\S+)$", on_disk, re.M)
        if written_by and written_by.group(1) == version and on_disk != text:
            problems.append(CertificateProblem(name, "out of date: run verispec smt --write-certificates"))
        status = re.search(r"\(set-info :status (\w+)\)", on_disk)
        expected = status.group(1) if status else None
        if replay and expected in ("sat", "unsat"):
            got = _replay(on_disk)
            if got != expected:
                problems.append(
                    CertificateProblem(name, f"replay answered {got}, the certificate says {expected}")
                )
    for name in sorted(set(present) - set(wanted)):
        problems.append(CertificateProblem(name, "stale: no catalog entry writes this file"))
    return problems
