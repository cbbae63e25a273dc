"""`heart raters invite`, `heart raters list` and `heart serve`, as a study team uses them."""

from __future__ import annotations

import hashlib
import os
import re
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

import heart
from heart.cli import app
from heart.people import invite
from heart.store import RaterRow

from ..servers import free_port, stop
from .conftest import WebStudy, get_ready, heart_serve, hidden, write_study

MakeStudy = Callable[..., WebStudy]
runner = CliRunner()


def test_invite_prints_one_working_link_per_rater_and_list_shows_them(
    web_study: MakeStudy,
) -> None:
    study = web_study(items=1)
    made = runner.invoke(
        app, ["raters", "invite", "2", "--study", str(study.root), "--base-url", "https://x.org/"]
    )
    assert made.exit_code == 0, made.output
    links = made.output.split()
    assert len(links) == 2 and all(re.fullmatch(r"https://x\.org/invite/\S{20,}", u) for u in links)
    client = study.client(study.make_app())
    assert client.get(links[0].removeprefix("https://x.org")).status_code == 303
    get_ready(client)
    page = client.get("/write").text
    client.post(
        "/write",
        data={"task": hidden(page, "task"), "csrf": hidden(page, "csrf"),
              "text": "That sounds so hard; I'm here."},
    )  # fmt: skip
    listed = runner.invoke(app, ["raters", "list", "--study", str(study.root)])
    assert listed.exit_code == 0, listed.output
    rows = [line for line in listed.output.splitlines() if "invite" in line]
    assert len(rows) == 2
    # one reply written, no judgments or labels, no checks, no verdicts counted
    assert any(re.search(r"\binvite\b.*\b1\b.*\b0\b.*\b0\b.*0 of 0\D+0\b", row) for row in rows)
    bad = runner.invoke(app, ["raters", "invite", "0", "--study", str(study.root)])
    assert bad.exit_code != 0


def _serve(root: Path, port: int, env: dict[str, str]) -> subprocess.Popen[str]:
    """`heart serve` on ``root`` in a subprocess, its output readable line by line."""
    return subprocess.Popen(
        [sys.executable, "-m", "heart", "serve", "--study", str(root), "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip


def _answer(server: subprocess.Popen[str], url: str) -> str:
    """The page at ``url`` (cookies kept across its redirects) once the starting ``server``
    answers, within a minute."""
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.build_opener(urllib.request.HTTPCookieProcessor()).open(
                url
            ) as page:
                assert page.status == 200
                return str(page.read().decode())
        except urllib.error.URLError:
            assert time.monotonic() < deadline and server.poll() is None
            time.sleep(0.2)


def test_serve_prints_an_admin_link_keeps_its_secret_private_and_its_token_across_restarts(
    tmp_path: Path,
) -> None:
    from heart.store import open_store

    root = tmp_path / "study"
    store = open_store(f"sqlite:///{tmp_path / 'heart.db'}")
    write_study(root, store, {}, seed=0)
    store.close()
    port = free_port()
    src = str(Path(heart.__file__).resolve().parents[1])
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEART_")}
    env["PYTHONPATH"] = src
    server = _serve(root, port, env)
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        match = re.fullmatch(rf"admin: (http://127\.0\.0\.1:{port}/admin\?token=\S+)\n", first)
        assert match, first
        assert "open the personal link" in _answer(server, f"http://127.0.0.1:{port}/")
        secret = root / ".heart-secret"
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600
        assert len(bytes.fromhex(secret.read_text().strip())) == 32
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        with browser.open(match.group(1)) as admin:  # the token, then the cookie on /admin
            assert admin.status == 200 and 'id="progress"' in admin.read().decode()
        kept = root / ".heart-admin"  # the token's digest only, readable by its owner alone
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600
        token = match.group(1).split("token=", 1)[1]
        assert kept.read_text().strip() == hashlib.sha256(token.encode()).hexdigest()
    finally:
        stop(server)
    server = _serve(root, port, env)  # restarted: the same link works, the token not printed
    try:
        assert server.stdout is not None
        again = server.stdout.readline()
        assert again.startswith(f"admin: http://127.0.0.1:{port}/admin?token=<the token printed ")
        assert token not in again and "delete that file for a new one" in again
        assert 'id="progress"' in _answer(server, match.group(1))
    finally:
        stop(server)


def test_serve_keeps_tokens_and_participant_ids_out_of_its_log(
    web_study: MakeStudy, tmp_path: Path
) -> None:
    study = web_study(items=1)
    ((_, invite_token),) = invite(study.store, 1)
    port, log = free_port(), tmp_path / "serve.log"
    base = f"http://127.0.0.1:{port}"
    participant, session = "PID-5f3a9c1e77", "SESSION-8d2b41"
    secrets = {
        "invite": invite_token,
        "unknown invite": "no-such-invite-token-4242",
        "wrong admin token": "not-the-admin-token-9191",
        "participant": participant,
        "session": session,
        "encoded participant": "PID-0c4e2a9b51",
        "encoded session": "SESSION-71f3e0",
    }
    with heart_serve(study.root, port, log) as admin_link:
        admin_token = admin_link.split("token=", 1)[1]
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        with browser.open(admin_link) as admin:  # the token, then the cookie on /admin
            assert 'id="progress"' in admin.read().decode()
        with browser.open(f"{base}/invite/{invite_token}") as entered:  # then the landing page
            assert "Your session" in entered.read().decode()
        entry = f"/prolific?PROLIFIC_PID={participant}&STUDY_ID=S1&SESSION_ID={session}"
        with browser.open(base + entry) as entered:
            assert "Your session" in entered.read().decode()
        # the same names percent-encoded: the app reads them, the log must not show them
        with browser.open(f"{base}/admin?%74oken={admin_token}") as admin:
            assert 'id="progress"' in admin.read().decode()
        entry = (
            f"/prolific?%50ROLIFIC_PID={secrets['encoded participant']}&STUDY_ID=S1"
            f"&SESSION%5FID={secrets['encoded session']}"
        )
        with browser.open(base + entry) as entered:
            assert "Your session" in entered.read().decode()
        for refused in (
            f"/invite/{secrets['unknown invite']}",
            f"/admin?token={secrets['wrong admin token']}",
        ):
            with pytest.raises(urllib.error.HTTPError) as answer:
                browser.open(base + refused)
            assert answer.value.code == 403
    output = log.read_text()
    assert output.count(admin_token) == 1  # only in the admin link printed at start
    assert output.startswith(f"admin: {admin_link}\n")
    assert [name for name, value in secrets.items() if value in output] == []
    for logged in (  # the requests are logged, with their secrets redacted
        '"GET /admin?token=[redacted] HTTP/1.1" 303',
        '"GET /invite/[redacted] HTTP/1.1" 303',
        '"GET /prolific?PROLIFIC_PID=[redacted]&STUDY_ID=S1&SESSION_ID=[redacted] HTTP/1.1" 303',
        '"GET /admin?%74oken=[redacted] HTTP/1.1" 303',
        '"GET /prolific?%50ROLIFIC_PID=[redacted]&STUDY_ID=S1&SESSION%5FID=[redacted] HTTP/1.1"'
        " 303",
        '"GET /invite/[redacted] HTTP/1.1" 403',
        '"GET /admin?token=[redacted] HTTP/1.1" 403',
    ):
        assert logged in output, output


def test_serve_refuses_a_study_whose_people_have_no_human_system(tmp_path: Path) -> None:
    root = tmp_path / "study"
    root.mkdir()
    (root / "study.yaml").write_text(
        "name: s\nsystems: [{name: m, kind: dataset, family: d}]\n", encoding="utf-8"
    )
    result = subprocess.run(
        [sys.executable, "-m", "heart", "serve", "--study", str(root), "--port", "1"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "HEART_ADMIN_TOKEN": "a" * 24, "COLUMNS": "300"},
    )  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stdout == (
        f"error: {root / 'study.yaml'}: people's replies need a system of kind 'human', and the "
        "study has none; add this line under systems: - {name: human, kind: human, family: "
        "human}\n"
    )


def test_serve_names_the_human_system_to_use_when_the_default_name_is_not_one(
    tmp_path: Path,
) -> None:
    """A study whose system of kind human has another name than people.human_system's default
    is told which setting to change, in one line."""
    from heart.errors import ConfigError
    from heart.web import create_app

    root = tmp_path / "study"
    root.mkdir()
    (root / "study.yaml").write_text(
        "name: s\nsystems: [{name: crowd, kind: human, family: human}]\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError) as refused:
        create_app(root, admin_token="a" * 24, secret=b"s" * 32)
    assert str(refused.value) == (
        f"{root / 'study.yaml'}: people's replies go to system 'human' (the default of "
        "people.human_system), which the study lacks; set people.human_system to crowd, or add "
        "this line under systems: - {name: human, kind: human, family: human}"
    )


def test_raters_list_shows_each_raters_measures_flags_and_decision(web_study: MakeStudy) -> None:
    from heart.people import JUDGE, claim, submit_judgment
    from heart.store import TaskRow

    study = web_study(items=2, check_every=1, raters_per_pair=1)  # 6 pairs, 3 attention checks
    study.make_app()  # which adds the seats
    ((rater, _),) = invite(study.store, 1)
    n = 0
    while (task := claim(study.store, rater, JUDGE, now=1000.0 * n, seconds=3600)) is not None:
        with study.store.session() as s:
            seat = s.get(TaskRow, task)
            check, expected = seat.check, seat.expected
        wrong = ("B+" if expected != "B+" else "A+") if check == "attention" else "A+"
        submit_judgment(study.store, rater, task, wrong, "", now=1000.0 * n + 60)
        n += 1
    listed = runner.invoke(app, ["raters", "list", "--study", str(study.root)])
    assert listed.exit_code == 0, listed.output
    text = " ".join(listed.output.split())  # lines wrapped at the console's width, joined
    assert "Quality per rater (no flag on fewer than 20 verdicts; shares with 99.5% " in text
    assert (
        f"{rater}: return: failed 2 of 2 attention checks: by Prolific's rules (two failed "
        "explicit checks in a session of 5 minutes or more) they may be asked to return the "
        "submission"
    ) in text
    # four verdicts on real pairs, all "A+" (first shown), a minute each against a floor of
    # 4 s; gold answered "A+": passed where the original was shown first
    assert "verdicts 4; first shown won 100% [" in text and "longest run 4 × A+" in text
    assert "median s (floor) 60 s (" in text and "faster than reading 0% [" in text
    assert "agrees with majority –; κ –" in text and "attention failed 2 of 2" in text
    assert "attention (excludes): failed 2 of 2 attention checks" in text
    (row,) = [line for line in listed.output.splitlines() if "invite" in line]
    # the pairs they judged went back to the pool; their checks stay theirs, as the evidence
    assert re.search(r"\binvite\b.*\b0\b.*\b0\b.*\b0\b.*3 of 4.*\b0\b.*\breturn\b", row)


def test_raters_reinstate_brings_a_rater_back_and_says_what_was_cleared(
    web_study: MakeStudy,
) -> None:
    study = web_study(items=1)
    ((rater, _),) = invite(study.store, 1)
    with study.store.session() as s:  # excluded as quality control records it
        person = s.get_one(RaterRow, rater)
        person.excluded_reason = "speed (people.exclude_flags): 20 of 20 too fast"
        person.meta = {
            **person.meta,
            "at_exclusion": {"at": "x", "measures": {}, "flags": ["speed"]},
        }
    args = ["raters", "reinstate", rater, "--study", str(study.root)]
    missing = runner.invoke(app, args)
    assert missing.exit_code != 0 and "--by" in missing.output
    done = runner.invoke(app, [*args, "--by", "Dr Lee"])
    assert done.exit_code == 0, done.output
    assert f"Reinstated {rater} (was excluded: speed" in " ".join(done.output.split())
    again = runner.invoke(app, [*args, "--by", "Dr Lee"])
    assert again.exit_code == 1  # a HeartError: the command line prints it as one line
    assert str(again.exception) == f"rater {rater} is not excluded; nothing to reinstate"
    with study.store.session() as s:
        meta = s.get_one(RaterRow, rater).meta
    assert meta["cleared"] == ["speed"] and meta["reinstated"][0]["by"] == "Dr Lee"
