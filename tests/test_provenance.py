"""Provenance: `heart --version`; which heart, study file, prompts, models and endpoints, date,
tokens and cost per stage a report and a bundle record, with no secret in them; a bundle's
provenance kept beside the importing study's own; bundles without one still import."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

import heart
from heart.config import parse_study
from heart.errors import ImportRefused
from heart.prompts import load_prompt
from heart.provenance import stage_uses
from heart.release import BUNDLE_VERSION, export_bundle, import_bundle
from heart.store import (
    BundleProvenanceRow,
    CallRow,
    ConversationRow,
    JudgmentRow,
    PairRow,
    RewriteRow,
    Store,
    open_store,
)
from heart.types import sha256_hex
from heart.version import git_commit, source_root

from .fakes.fault_server import FaultServer, conversation, count_words
from .helpers import heart as run_heart
from .helpers import rewrite_study, set_items
from .rows import seed_study, snapshot

KEY = "sk-live-0123456789-SECRET"  # the API key, in the environment only
HEADER = "Bearer sk-header-SECRET"  # a header someone pasted into a comment of the study file
QUERY = "QUERYSECRET"  # a key carried in a base URL's query
ITEMS = 3
GIT = shutil.which("git")


def _provenance(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text(encoding="utf-8")))


def _without_date(provenance: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in provenance.items() if k != "written_at"}


# --- heart --version -----------------------------------------------------------------------


def test_heart_version_prints_the_version_and_the_commit_of_its_checkout() -> None:
    out = run_heart("--version").stdout.strip()
    commit = git_commit()
    assert out == f"heart-bench {heart.__version__}" + (f" (commit {commit})" if commit else "")
    if GIT and commit is not None:  # the same commit git itself names
        head = subprocess.run([GIT, "-C", str(source_root()), "rev-parse", "HEAD"],
                              capture_output=True, text=True, check=True)  # fmt: skip
        assert commit == head.stdout.strip()


def test_heart_version_outside_a_checkout_prints_the_version_alone(tmp_path: Path) -> None:
    """Installed without .git beside it (and without any git program): no commit, no failure."""
    site = tmp_path / "site"
    shutil.copytree(Path(heart.__file__).parent, site / "heart")
    out = run_heart("--version", env={"PYTHONPATH": str(site), "PATH": str(tmp_path)})
    assert out.stdout == f"heart-bench {heart.__version__}\n"


def _git(root: Path, *args: str) -> str:
    assert GIT is not None
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "HOME": str(root)}
    done = subprocess.run([GIT, "-C", str(root), *args], capture_output=True, text=True,
                          check=True, env=env)  # fmt: skip
    return done.stdout.strip()


@pytest.mark.skipif(GIT is None, reason="making a git checkout needs the git program")
def test_git_commit_reads_a_checkout_a_worktree_and_packed_refs(tmp_path: Path) -> None:
    root = tmp_path / "checkout"
    (root / "src" / "heart").mkdir(parents=True)
    (root / "src" / "heart" / "__init__.py").write_text("")
    assert git_commit(root) is None  # not a git checkout yet
    _git(root, "init", "-q", "-b", "main")
    assert git_commit(root) is None  # a branch without a commit
    _git(root, "add", ".")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    head = _git(root, "rev-parse", "HEAD")
    assert git_commit(root) == head
    _git(root, "pack-refs", "--all")  # the branch now lives in packed-refs only
    assert not (root / ".git" / "refs" / "heads" / "main").exists()
    assert git_commit(root) == head
    worktree = tmp_path / "worktree"
    _git(root, "worktree", "add", "-q", "-b", "other", str(worktree))
    assert (worktree / ".git").is_file() and git_commit(worktree) == head
    _git(root, "checkout", "-q", "--detach")
    assert git_commit(root) == head
    (root / ".git" / "HEAD").write_text("not a commit\n")
    assert git_commit(root) is None
    shutil.rmtree(root / "src")  # a folder that does not hold heart's sources
    assert git_commit(worktree.parent / "checkout") is None


# --- a study through a local server: report, bundle, import -------------------------------


def _verdict(body: dict[str, Any]) -> str:
    return json.dumps({"winner": "A", "strength": 2, "axes": {k: "A2" for k in "HEART"},
                       "rationale": "A follows the seeker more closely."})  # fmt: skip


def _reply(body: dict[str, Any]) -> str:
    if body["model"].startswith("judge-"):
        return _verdict(body)
    return "That sounds really hard; I am here with you."


@pytest.fixture(scope="module")
def server() -> Iterator[FaultServer]:
    with FaultServer(reply_fn=_reply, key_includes_model=True) as fault_server:
        yield fault_server


def _model(server: FaultServer, name: str, price: str) -> str:
    return (
        f"{{provider: openai, base_url: '{server.openai_base_url}', model: {name}, "
        f"api_key_env: HEART_TEST_KEY, price: {price}}}"
    )


SYSTEM_PRICE = "{input_per_mtok: 2, output_per_mtok: 8}"
JUDGE_PRICE = "{input_per_mtok: 1, output_per_mtok: 4}"


def _write(root: Path, server: FaultServer) -> None:
    rewrite_study(
        root,
        [
            *(f"{{name: {name}, kind: model, family: {family}, "
              f"model: {_model(server, name, SYSTEM_PRICE)}}}"
              for name, family in (("m-amber", "fa"), ("m-birch", "fb"))),
            "{name: esconv-original, kind: dataset, family: dataset}",
        ],
        [f"{{name: judge-o, family: fj, model: {_model(server, 'judge-o', JUDGE_PRICE)}}}"],
        f"# Authorization: {HEADER}\n"
        "rationales: {coder: {provider: openai, model: coder-x, api_key_env: HEART_TEST_KEY, "
        f"base_url: 'https://Coder.Example/v1/?api-key={QUERY}'}}}}\n"
        "ratings: {bootstrap_rounds: 50}\n",
        items=ITEMS,
    )  # fmt: skip


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory, server: FaultServer) -> Path:
    """A demo-corpus study of 3 items, two models and the ESConv original, one LLM judge, all
    on the local server; generated, judged and reported through the real `heart` (the tests
    only read it)."""
    tmp_path = tmp_path_factory.mktemp("provenance")
    root = tmp_path / "study"
    run_heart("init", root, "--demo")
    set_items(root, ITEMS)
    run_heart("items", "build", "--study", root)
    _write(root, server)
    env = {"HEART_TEST_KEY": KEY}
    run_heart("generate", "--study", root, env=env)
    run_heart("judge", "--study", root, env=env)
    run_heart("report", "--study", root, env=env)
    return root


def _served(server: FaultServer, prefix: str) -> tuple[int, int, int]:
    """Answers, tokens in and out the server gave the models whose names start with prefix."""
    answered = [r for r in server.requests if r.path.endswith("/chat/completions")
                and r.status == 200 and r.body["model"].startswith(prefix)]  # fmt: skip
    tokens_in = sum(count_words(t) for r in answered for _, t in conversation(r.body))
    tokens_out = sum(count_words(_reply(r.body)) for r in answered)
    return len(answered), tokens_in, tokens_out


def test_the_report_records_heart_the_study_file_prompts_models_and_costs(
    judged: Path, server: FaultServer
) -> None:
    report = judged / "report"
    p = _provenance(report / "provenance.json")
    assert (p["format"], p["version"], p["heart_version"]) == ("heart-provenance", 1,
                                                               heart.__version__)  # fmt: skip
    assert p["git_commit"] == git_commit()
    written = dt.datetime.fromisoformat(p["written_at"])
    assert dt.timedelta(0) <= dt.datetime.now(dt.UTC) - written < dt.timedelta(minutes=30)
    study_file = (judged / "study.yaml").read_bytes()
    assert p["study_file_sha256"] == hashlib.sha256(study_file).hexdigest()
    assert p["study"] == "heart-demo" and p["imported"] == []

    assert [(x["name"], x["version"]) for x in p["prompts"]] == [
        ("generation", "v1"), ("judge-heart", "v2"), ("reask", "v1"),
    ]  # fmt: skip
    for prompt in p["prompts"]:
        assert prompt["hash"] == load_prompt(prompt["name"], prompt["version"]).hash

    local = server.openai_base_url
    assert p["models"] == [
        {"role": "system", "name": "m-amber", "provider": "openai", "model": "m-amber",
         "endpoint": local},
        {"role": "system", "name": "m-birch", "provider": "openai", "model": "m-birch",
         "endpoint": local},
        {"role": "judge", "name": "judge-o", "provider": "openai", "model": "judge-o",
         "endpoint": local},
        {"role": "coder", "name": "rationales.coder", "provider": "openai", "model": "coder-x",
         "endpoint": "https://coder.example/v1"},  # the query, which held a key, left out
    ]  # fmt: skip

    stages = {s["stage"]: s for s in p["stages"]}
    assert list(stages) == ["adversarial", "generate", "judge", "strategies", "rationales"]
    answers, tokens_in, tokens_out = _served(server, "m-")
    assert answers == 2 * ITEMS and tokens_in > 0 and tokens_out == 2 * ITEMS * 9
    generate = stages["generate"]
    assert (generate["answers"], generate["failed"], generate["calls"]) == (2 * ITEMS, 0, answers)
    assert (generate["tokens_in"], generate["tokens_out"]) == (tokens_in, tokens_out)
    assert generate["cost_usd"] == pytest.approx((2 * tokens_in + 8 * tokens_out) / 1e6)
    calls, tokens_in, tokens_out = _served(server, "judge-")
    judge = stages["judge"]
    assert judge["answers"] == 3 * ITEMS  # three systems: three pairs per item
    # the two models reply alike, so a pair of each with the original, shown in one order, asks
    # the judge the very same thing: one call, paid once, answers both
    assert 2 * ITEMS <= calls < 3 * ITEMS
    assert (judge["calls"], judge["tokens_in"], judge["tokens_out"]) == (calls, tokens_in,
                                                                        tokens_out)  # fmt: skip
    assert judge["cost_usd"] == pytest.approx((tokens_in + 4 * tokens_out) / 1e6)
    # live calls, no prompt cache: billed at list price, nothing saved
    for use in (generate, judge):
        assert (use["cached_tokens_in"], use["list_cost_usd"]) == (0, use["cost_usd"])
    for stage in ("adversarial", "strategies", "rationales"):
        assert stages[stage] == {"stage": stage, "answers": 0, "failed": 0, "calls": 0,
                                 "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0,
                                 "cached_tokens_in": 0, "list_cost_usd": 0.0}  # fmt: skip

    markdown = (report / "report.md").read_text(encoding="utf-8")
    part = markdown.split("### Provenance", 1)[1].split("### Prompts", 1)[0]
    assert f"- written by heart-bench {heart.__version__}, " in part
    assert f"- study file sha256 `{p['study_file_sha256']}`" in part
    assert f"| judge | judge-o | openai | judge-o | {local} |" in part
    assert f"| generate | {2 * ITEMS} | 0 | {2 * ITEMS} | {generate['tokens_in']:,} |" in part
    page = (report / "index.html").read_text(encoding="utf-8")
    assert "<h3 id='provenance'>Provenance</h3>" in page
    assert "<table id='provenance-models'>" in page and "<table id='provenance-stages'>" in page


def test_no_secret_reaches_the_report_or_the_bundle(judged: Path, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    run_heart("export", bundle, "--study", judged, env={"HEART_TEST_KEY": KEY})
    for folder in (judged / "report", bundle):
        for path in folder.iterdir():
            assert KEY not in path.read_text(encoding="utf-8"), path
    for path in (judged / "report" / "provenance.json", bundle / "provenance.json"):
        text = path.read_text(encoding="utf-8")
        for secret in (HEADER, QUERY, "HEART_TEST_KEY", "api-key"):
            assert secret not in text, (path, secret)


def test_the_bundle_carries_the_provenance_and_its_manifest_checks_it(
    judged: Path, tmp_path: Path
) -> None:
    bundle = tmp_path / "bundle"
    out = run_heart("export", bundle, "--study", judged).stdout
    assert "provenance.json" not in out  # rows are counted per table; the file has none
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["version"] == BUNDLE_VERSION == 5
    text = (bundle / "provenance.json").read_text(encoding="utf-8")
    assert manifest["files"]["provenance.json"] == {"sha256": sha256_hex(text), "rows": None}
    exported = _provenance(bundle / "provenance.json")
    reported = _provenance(judged / "report" / "provenance.json")
    assert _without_date(exported) == _without_date(reported)  # nothing ran in between

    altered = tmp_path / "altered"
    shutil.copytree(bundle, altered)
    changed = text.replace('"judge-o"', '"judge-x"')
    (altered / "provenance.json").write_text(changed, encoding="utf-8")
    refused = run_heart("import", altered, "--study", tmp_path / "fresh", check=False)
    assert refused.returncode == 2
    assert "provenance.json: sha256 differs from manifest.json; the bundle was altered" in (
        " ".join(refused.stdout.split())
    )


def test_an_imported_bundle_keeps_its_provenance_beside_the_study_own(
    judged: Path, tmp_path: Path
) -> None:
    first = tmp_path / "first"
    run_heart("export", first, "--study", judged)
    origin = _provenance(first / "provenance.json")

    importer = tmp_path / "importer"
    importer.mkdir()
    config = (judged / "study.yaml").read_text(encoding="utf-8")
    config = config.replace("name: heart-demo", "name: importer")
    (importer / "study.yaml").write_text(config, encoding="utf-8")
    out = run_heart("import", first, "--study", importer).stdout
    assert "provenance.json 1" in out
    assert "Imported: nothing new" in run_heart("import", first, "--study", importer).stdout
    run_heart("report", "--study", importer)
    own = _provenance(importer / "report" / "provenance.json")
    assert own["study"] == "importer"
    assert own["study_file_sha256"] == hashlib.sha256(config.encode()).hexdigest()
    assert own["study_file_sha256"] != origin["study_file_sha256"]
    assert own["imported"] == [origin]  # readable as it came, never in place of the study's own
    markdown = (importer / "report" / "report.md").read_text(encoding="utf-8")
    assert (
        f"- imported from a bundle of study `heart-demo` written by heart-bench "
        f"{origin['heart_version']}"
    ) in markdown

    # a bundle of the importer carries both; a study made from it keeps both, flattened
    second = tmp_path / "second"
    run_heart("export", second, "--study", importer)
    carried = _provenance(second / "provenance.json")
    assert carried["study"] == "importer" and carried["imported"] == [origin]
    third = tmp_path / "third"
    run_heart("import", second, "--study", third)
    run_heart("report", "--study", third)
    kept = _provenance(third / "report" / "provenance.json")["imported"]
    assert [q["study"] for q in kept] == ["heart-demo", "importer"]
    assert kept[0] == origin and kept[1] == {**carried, "imported": []}


# --- bundles through the API: old ones, bad ones ---------------------------------------------


def _bundle(store: Store, tmp_path: Path) -> Path:
    root = tmp_path / "s"
    root.mkdir()
    (root / "study.yaml").write_text("name: t\nsystems: [{name: m1, kind: dataset, family: d}]\n")
    seed_study(store, ["m1", "m2"], items=1, completions=True)
    bundle = tmp_path / "bundle"
    export_bundle(store, root, bundle)
    return bundle


def _reseal(bundle: Path, manifest: dict[str, Any]) -> None:
    (bundle / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def test_a_bundle_written_before_bundles_carried_provenance_still_imports(
    store: Store, tmp_path: Path
) -> None:
    bundle = _bundle(store, tmp_path)
    manifest = json.loads((bundle / "manifest.json").read_text())
    del manifest["files"]["provenance.json"]
    manifest["version"] = 2
    (bundle / "provenance.json").unlink()
    _reseal(bundle, manifest)
    other = open_store(f"sqlite:///{tmp_path / 'other.db'}")
    summary = import_bundle(other, bundle)
    assert summary.added["completions.jsonl"] == 2 and "provenance.json" not in summary.added
    with other.session() as s:
        assert list(s.scalars(select(BundleProvenanceRow))) == []
    other.close()


def test_a_bundle_provenance_with_a_bad_field_is_refused_and_nothing_stored(
    store: Store, tmp_path: Path
) -> None:
    bundle = _bundle(store, tmp_path)
    other = open_store(f"sqlite:///{tmp_path / 'other.db'}")
    provenance = _provenance(bundle / "provenance.json")
    provenance["stages"][0]["tokens_in"] = "many"
    text = json.dumps(provenance)
    (bundle / "provenance.json").write_text(text, encoding="utf-8")
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["files"]["provenance.json"]["sha256"] = sha256_hex(text)
    _reseal(bundle, manifest)
    before = snapshot(other)
    with pytest.raises(ImportRefused) as refused:
        import_bundle(other, bundle)
    message = str(refused.value)
    assert message.startswith(f"{bundle / 'provenance.json'}: 'stages.0.tokens_in': ")
    assert message.endswith("; export the bundle again") and "\n" not in message
    assert snapshot(other) == before
    other.close()


# --- tokens and cost per stage, by hand -----------------------------------------------------


def test_the_adversarial_stage_counts_the_calls_its_rewrites_keep(store: Store) -> None:
    config = parse_study(
        "name: t\nsystems: [{name: d, kind: dataset, family: d}]\nitems:\n  adversarial: 1\n"
        "  rewriter: {provider: openai, base_url: 'https://api.example/v1', model: rw, "
        "price: {input_per_mtok: 1, output_per_mtok: 2}}\n"
        "  hostility_rater: {provider: openai, base_url: 'https://api.example/v1', model: rater, "
        "price: {input_per_mtok: 3, output_per_mtok: 4}}\n"
    )
    with store.session() as s:
        s.add(ConversationRow(id="c1", problem_type="p", emotion_type="e", experience_type="",
                              situation="", survey={}, turns=[], origin={}))  # fmt: skip
        s.flush()
        s.add(RewriteRow(id="r1", conversation_id="c1", start=0, end=4, profile="always-10",
                         targets=[10], status="rejected", attempts=1, reasons=[], turns=[],
                         ratings=[], source_ratings=[], calls=["k1", "k2", "k3"],
                         created_at="x"))  # fmt: skip
        for key, model, tokens_in, tokens_out in (("k1", "rw", 100, 20), ("k2", "rater", 50, 2)):
            s.add(CallRow(hash=key, provider="openai", endpoint="https://api.example/v1",
                          model=model, created_at="x",
                          response={"text": "t", "tokens_in": tokens_in,
                                    "tokens_out": tokens_out}))  # fmt: skip
    # the other stages: an answer from a call counts, failed or not; a person's (no call) not
    seed_study(store, ["m1", "m2"], items=1, completions=True, judges=["j1", "j2", "j3", "j4"])
    with store.session() as s:
        s.add(PairRow(id="p1", item_id="i0", a_id="cp-0-m1", b_id="cp-0-m2", design="all"))
        s.flush()
        for judge, call, status, tokens in (
            ("j1", "c", "ok", 10),
            ("j2", "d", "failed", 5),
            ("j3", None, "ok", None),
            ("j4", "c", "ok", 10),  # the same call as j1's: answers twice, paid once
        ):
            s.add(JudgmentRow(id=f"jd-{judge}", pair_id="p1", judge=judge, order="ab",
                              status=status, winner="a" if status == "ok" else None,
                              strength=1 if status == "ok" else None, call_hash=call,
                              tokens_in=tokens, tokens_out=tokens, cost_usd=0.5 if call else None,
                              created_at="x"))  # fmt: skip
    stages = {s.stage: s for s in stage_uses(store, config)}
    adversarial = stages["adversarial"]
    # k3 left no answer in the call cache (failed, refused, or imported): not counted
    assert (adversarial.answers, adversarial.failed, adversarial.calls) == (2, 0, 2)
    assert (adversarial.tokens_in, adversarial.tokens_out) == (150, 22)
    assert adversarial.cost_usd == pytest.approx((100 * 1 + 20 * 2 + 50 * 3 + 2 * 4) / 1e6)
    judge = stages["judge"]
    assert (judge.answers, judge.failed, judge.calls) == (3, 1, 2)
    assert (judge.tokens_in, judge.tokens_out, judge.cost_usd) == (15, 15, 1.0)
    unpriced = {s.stage: s for s in stage_uses(store)}["adversarial"]
    assert (unpriced.tokens_in, unpriced.cost_usd) == (150, 0.0)
