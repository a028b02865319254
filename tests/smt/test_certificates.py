"""The SMT-LIB2 certificates in proofs/smt are current and replay to their stated status."""

from __future__ import annotations

from pathlib import Path

from verispec.smt.certificates import check_certificates

ROOT = Path(__file__).resolve().parents[2]


def test_certificates_are_current_and_replay() -> None:
    problems = check_certificates(ROOT / "proofs" / "smt")
    assert problems == [], "\n".join(f"{p.file}: {p.problem}" for p in problems)


def test_a_tampered_certificate_is_caught(tmp_path) -> None:
    source = ROOT / "proofs" / "smt"
    for path in source.glob("*.smt2"):
        (tmp_path / path.name).write_text(path.read_text())
    target = tmp_path / "crop.smt2"
    target.write_text(target.read_text().replace("(set-info :status unsat)", "(set-info :status sat)"))
    (tmp_path / "leftover.smt2").write_text("(check-sat)\n")
    problems = {p.file: p.problem for p in check_certificates(tmp_path)}
    assert "replay answered unsat, the certificate says sat" in problems["crop.smt2"]
    assert problems["leftover.smt2"].startswith("stale")
