"""Record the store's guard decisions on a large fixed input set, for tests/perf_equivalence/test_guard_decisions.py.

The guard (``ledger.storage.guard``) is screened for speed; its decisions must
not move when the screens do. This script records what the guard answers —
every problem of :func:`storage_problems`, with its message, and
:func:`privacy_rule` / :func:`is_credential_field` on single texts — on:

* generated inputs (seeded): nested payloads whose strings and keys are built
  from pieces of every rule's matches and near misses (case variants, folded
  letters, separators, escapes, NUL, lone surrogates, NaN), with goal ids,
  sources, kinds and schema versions that break the column rules now and then;
* the same again from a second seed, with pieces of the wider and hidden forms
  added (``file://`` URLs, ``//server/share``, ``$HOME/``, percent-encoding,
  fullwidth and invisible characters, ``pwd=``/``pass=``, the token families of a
  secret scanner) and their near misses (appended after the first set, whose
  inputs stay as they were recorded before the rules widened);
* the corpus: every JSON document under tests/ and examples/ (by path).

The inputs are stored beside the answers, so a change to this generator never
changes what the test compares. Re-record only when a rule changes on purpose:

    .venv/bin/python -m tests.record_guard_decisions
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import random
from pathlib import Path
from typing import Any

from benchledger.ledger.storage.canonical import canonical_json
from benchledger.ledger.storage.guard import Storable, storage_problems
from benchledger.ledger.storage.privacy import is_credential_field, privacy_rule
from benchledger.projections.batch_manifest import BATCH_KIND

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "data" / "guard-decisions.json.gz"
CORPUS_DIRECTORIES = ("tests", "examples")
SEED = 20261202
GENERATED_CASES = 6000
GENERATED_TEXTS = 12000
# The second set (the wider and hidden forms), from its own seed.
SECOND_SEED = SEED + 30
SECOND_CASES = 2000
SECOND_TEXTS = 4000

# fmt: off
# Pieces of every rule's matches and of their near misses.
PIECES = (
    "bearer ", "Bearer\t", "BEARER", "0123456789abcdef", "abcdefghijklmnopqrstuv", "x", "Z", "9", "_", "-", "=", ":", " = ",
    ": ", ".", "~", "+", "@", ",", ";", "<", ">", "'", "`", '"', "\\", "\\\\", "\n", "\t", "\u00a0", "\u2003",
    "ak", "sk", "AK", "Sk", "\u017fk", "a\u212a", "s\u212a", "ak_", "sk-", "AK-", "sK_", "ak=", "sk:",
    "key", "KEY", "access", "access_key", "secret", "secret-key", "token", "TOKEN", "Token", "tokens", "max_tokens",
    "/", "/tmp/", "/tmp", "/TMP/", "/Users/", "/Volumes/", "/var/folders/", "/private/tmp/", "/var/tmp", "tmp/",
    "/home/", "/home", "/root", "/root/", "/mnt/", "/media/", "/workspace", "/workspaces/", "/HOME/", "/run/user/",
    "~/", "~alice/", "x~/", "C:\\", "d:/", "c:", "\\\\srv\\", "\\\\srv", "https://", "http://u:pw@", "u:pw@", ":***@",
    "git+ssh://", "password", "PassWord", "passwd", "passphrase", "secrets", "authorization", "Authorization: ",
    "api_key", "api-key", "apikey", "private_key", "credential", "credentials", "db_", "_key", "my.",
    "ghp_", "gho_", "github_pat_", "AKIA", "ASIA", "ABCDEFGHIJKLMNOP", "ABCDEFGHIJKLMNO", "xoxb-", "xoxq-",
    "AIza", "glpat-", "eyJ", "eyJhbGciOiJIUzI1NiJ9.", "abcdefgh.", "-----BEGIN ", "RSA ", "PRIVATE KEY-----",
    "PUBLIC KEY-----", " BLOCK-----", "***", "*", "true", "false", "none", "null", "12", "3.5", "é", "ß", "\u0130",
    "task", "mask", "ask", "\U0001f600", "\x00", "\ud800", "\udfff", "\\u0000", "\\ud800", "NaN", "Infinity",
    # whole matches, each beside a near miss of the same rule
    "api_key=abcdefgh1", "api_key=12345678", "TOKEN: 'abcdefghijklm'", "token=abcdefghijk", "db.password = hunter2",
    "password=true", "password=***", "secret: none", "Authorization=Basic", "AKIAABCDEFGHIJKLMNOP", "AKIAABCDEFGHIJKLMNO",
    "ASIA0123456789ABCDEF", "eyJabcdefgh.eyJabcdefgh.", "eyJabcdefgh.eyJabcdefg", "-----BEGIN RSA PRIVATE KEY-----",
    "-----BEGIN PRIVATE KEY BLOCK-----", "-----BEGIN PUBLIC KEY-----", "AIza012345678901234567890123456789",
    "AIza01234567890123456789012345678", "ghp_0123456789abcdef", "ghp_0123456789abcde", "github_pat_0123456789_abcdef",
    "xoxb-0123456789", "xoxb-012345678", "glpat-0123456789abcdef", "glpat-0123456789abcde", "bearer abcdefghijklmnop",
    "bearer abcdefghijklmno", "ak_0123456789", "sk-012345678", "https://user:pw@host", "https://user:***@host",
)
KEYS = (
    "schema_version", "status", "task", "name", "path", "notes", "password", "db_password", "DB-Password", "api_key",
    "api-key", "apiKey", "token", "github_token", "max_tokens", "tokens", "sk", "AK", "ak_", "my.secret", "secrets",
    "client_secret", "credential", "credentials", "authorization", "passphrase", "secret_key", "private-key",
    "x__token", "_token", "token_", "task_id", "mask", "key", "keys", "Token", "p\u212a", "s\u212a",
)
VALUES_OF_CREDENTIALS = ("", " ", "true", "FALSE", "None", "null", "***", " ** ", "12", "-3.5", "+7", "1e5", "hunter2", "x")
# fmt: on


# fmt: off
# Pieces of the wider and hidden forms (percent-encoded, fullwidth, invisible), of their matches and of their near misses.
WIDER_AND_HIDDEN_PIECES = (
    "file://", "file://localhost", "FILE://", "localhost", "/var/home/", "/export/home/", "/var/", "/export/", "//srv/share",
    "//", "//srv", "(", "$HOME/", "${HOME}/", "$HOME", "%USERPROFILE%\\", "%2F", "%2f", "%2Fhome%2F", "%3A%2F%2F", "%40",
    "%3A", "%25", "%252F", "%", "%E2%80%8B", "%EF%BC%9A", "%zz", "\uff1a", "\uff0f", "\uff20", "\uff3c", "\uff0d",
    "\u200b", "\u200d", "\u00ad", "\ufeff", "\u2060", "\u202e", "\ufe0f", "\u3164", "\u00a0", "\u2003", "\u017f",
    "pwd", "Pwd=", "PWD=/srv/app", "pass", "pass=", "pass: yes", "pass=3", "Pwd=s3cret;", "pass=hunter2", "first_pass=",
    "creds", "AccountKey=", "SharedAccessKey", "hf_", "hf_abcdefghijklmnopqrstuvwxyzabcdefgh", "hf_model_inference",
    "api_org_", "npm_", "npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm_abcdefghijklmnopqrstuvwxyz012345678",
    "pypi-AgEIcHlwaS5vcmc", "glptt-", "glrt-0123456789abcdefghij", "glrt-0123456789abcdefghi", "GR1348941", "xapp-1-",
    "xoxe-", "xoxe.xoxb-", "hooks.slack.com/services/", "ABIA", "A3TX", "ACCA0123456789ABCDEF", "abc8Q~", "8Q~", "dapi",
    "dapi0123456789abcdef0123456789abcdef", "dop_v1_", "shpat_", "SG.", "rk_live_", "rk_", "hvs.", "sntrys_", "glc_", "glsa_",
    "eyJrIjoi", "AGE-SECRET-KEY-1", "abcdefghijklmnopqrstuvwxyz0123456789", "0123456789abcdef0123456789abcdef",
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "fix-home-directory-permissions", "token_count", "password-reset-flow",
    "abc8Q~abcdefghijklmnopqrstuvwxyz01234", "pypi-AgEIcHlwaS5vcmcCJDAwMDAwMDAwLTAwMDAtMDAwMC0wMDAwLTAwMDAwMDAwMDAwMAACKlsz",
)
SECOND_KEYS = KEYS + (
    "creds", "AccountKey", "shared_access_key", "pwd", "pass", "pass\u200bword", "\uff50\uff41\uff53\uff53\uff57\uff4f\uff52\uff44",
    "api%5Fkey", "\u017fk", "token_count",
)
# fmt: on


# fmt: off
# Pieces that break no rule alone (a write of these only is mostly storable: the screens' near misses).
NEAR_MISSES = (
    "x", "Z", "9", "_", "-", ".", "+", ",", " ", "ak", "sk", "key", "KEY", "token", "Token", "tokens", "max_tokens",
    "access", "secret", "task", "mask", "/", "/tmp", "tmp/", "/TMP/", "/homes", "~", "@", "bearer", "eyJ", "AIza",
    "xox", "glpat", "ghp", "github", "AKIA", "passes", "credit", "author", "é", "ß", "\u0130", "true", "12", "3.5",
    "run-0123456789abcdef", "terminal-bench@2.0", "codex-goal-mode", "2026-11-24", "abcdefghijklmnop",
)
SECOND_NEAR_MISSES = NEAR_MISSES + (
    "fix-home-directory-permissions", "token_count", "password-reset-flow", "pass: yes", "pass=3", "PWD=/srv/app", "hf_model",
    "https://host/share", "file:///opt/x", "85%", "%20", "%zz", "\u00e9t\u00e9", "\uff21", "npm_config", "/var/lib", "//",
)
# fmt: on


def _text(rng: random.Random, pool: tuple[str, ...] = PIECES) -> str:
    pieces = [
        rng.choice(pool) if rng.random() < 0.8 else chr(rng.randrange(32, 0x250)) for _ in range(rng.randrange(0, 7))
    ]
    return "".join(pieces)


# Keys that name no credential, some of them nearly.
HARMLESS_KEYS = (
    "schema_version",
    "status",
    "task",
    "name",
    "notes",
    "max_tokens",
    "tokens",
    "task_id",
    "mask",
    "keys",
    "token_",
    "x__token",
    "_token",
)


def _key(rng: random.Random, pool: tuple[str, ...], keys: tuple[str, ...]) -> str:
    roll = rng.random()
    if roll < 0.5:
        return rng.choice(keys)
    if roll < 0.6:
        return rng.choice(keys) + rng.choice(("", "_", ".", "-")) + rng.choice(keys)
    return _text(rng, pool)


def _value(rng: random.Random, depth: int, pool: tuple[str, ...], keys: tuple[str, ...]) -> Any:
    roll = rng.random()
    if depth < 4 and roll < 0.25:
        return {_key(rng, pool, keys): _value(rng, depth + 1, pool, keys) for _ in range(rng.randrange(0, 5))}
    if depth < 4 and roll < 0.35:
        return [_value(rng, depth + 1, pool, keys) for _ in range(rng.randrange(0, 4))]
    if roll < 0.45:
        return rng.choice((None, True, False, 0, -1, 12345678901234567890, 2.5, 1e300, math.nan, math.inf, -math.inf))
    if roll < 0.55:
        return rng.choice(VALUES_OF_CREDENTIALS)
    return _text(rng, pool)


def _column(rng: random.Random, usual: str, mixed: bool) -> str:
    roll = rng.random() if mixed else 0.0
    if roll < 0.85:
        return usual
    if roll < 0.9:
        return usual + "x" * rng.randrange(50, 140)
    return usual + _text(rng)


def _generated_case(
    rng: random.Random, pieces: tuple[str, ...] = PIECES, keys_of_all: tuple[str, ...] = KEYS, near_misses: tuple[str, ...] = NEAR_MISSES
) -> list[dict[str, Any]]:
    """One write: mostly near misses only (storable but for a number or a combination), else anything."""
    mixed = rng.random() < 0.4
    pool, keys = (pieces, keys_of_all) if mixed else (near_misses, HARMLESS_KEYS)
    items = []
    for _ in range(rng.randrange(1, 4)):
        payload = {_key(rng, pool, keys): _value(rng, 1, pool, keys) for _ in range(rng.randrange(0, 6))}
        if rng.random() < 0.1:
            payload = [payload, _value(rng, 1, pool, keys)]
        kind = (
            BATCH_KIND
            if rng.random() < 0.05
            else _column(rng, rng.choice(("benchmark_run", "preflight", "comparison")), mixed)
        )
        items.append(
            {
                "goal_id": _column(rng, rng.choice(("g1", "goal-2")), mixed),
                "kind": kind,
                "schema_version": None if rng.random() < 0.2 else _column(rng, "benchmark_run_v0", mixed),
                "source": _column(rng, rng.choice(("cli ingest", "bench")), mixed),
                "payload": payload,
                "origin": rng.choice((None, "run.json", "backlog.ndjson:3")),
            }
        )
    return items


def _storable(item: dict[str, Any]) -> Storable:
    return Storable(
        item["goal_id"],
        item["kind"],
        item["schema_version"],
        item["source"],
        item["payload"],
        canonical_json(item["payload"]),
        item["origin"],
    )


def corpus_paths() -> list[str]:
    """Every JSON document of the corpus that parses (paths relative to the repository, sorted)."""
    found = []
    for directory in CORPUS_DIRECTORIES:
        for path in sorted((ROOT / directory).rglob("*.json")):
            if path.name == FIXTURE.name:
                continue
            try:
                json.loads(path.read_text(encoding="utf-8"))
            except (ValueError, UnicodeDecodeError, RecursionError):
                continue
            found.append(path.relative_to(ROOT).as_posix())
    return found


def corpus_case(path: str) -> list[dict[str, Any]]:
    """A corpus document as one event of a write (its own path is the origin)."""
    payload = json.loads((ROOT / path).read_text(encoding="utf-8"))
    schema = payload.get("schema_version") if isinstance(payload, dict) else None
    return [
        {
            "goal_id": "corpus",
            "kind": "corpus",
            "schema_version": schema if isinstance(schema, str) else None,
            "source": "corpus",
            "payload": payload,
            "origin": path,
        }
    ]


def corpus_digest(path: str) -> str:
    """The recorded document's digest: an answer recorded for other content is not compared."""
    return hashlib.sha256((ROOT / path).read_bytes()).hexdigest()


def decisions(items: list[dict[str, Any]]) -> list[list[str]]:
    """The guard's answer on one write: every problem as ``[where, problem]``, in its order."""
    return [list(problem) for problem in storage_problems([_storable(item) for item in items])]


def text_decisions(text: str, value: str) -> list[Any]:
    """``privacy_rule`` on ``text``, and whether ``text: value`` is a credential field."""
    return [privacy_rule(text), is_credential_field(text, value)]


def record() -> dict[str, Any]:
    rng = random.Random(SEED)
    cases = [_generated_case(rng) for _ in range(GENERATED_CASES)]
    texts = [
        [
            _text(rng, rng.choice((PIECES, NEAR_MISSES))) if rng.random() < 0.7 else _key(rng, PIECES, KEYS),
            rng.choice(VALUES_OF_CREDENTIALS + ("secret-value",)),
        ]
        for _ in range(GENERATED_TEXTS)
    ]
    rng = random.Random(SECOND_SEED)
    pieces = PIECES + WIDER_AND_HIDDEN_PIECES
    cases += [_generated_case(rng, pieces, SECOND_KEYS, SECOND_NEAR_MISSES) for _ in range(SECOND_CASES)]
    texts += [
        [
            _text(rng, rng.choice((pieces, SECOND_NEAR_MISSES))) if rng.random() < 0.7 else _key(rng, pieces, SECOND_KEYS),
            rng.choice(VALUES_OF_CREDENTIALS + ("secret-value",)),
        ]
        for _ in range(SECOND_TEXTS)
    ]
    return {
        "generated": [{"items": items, "problems": decisions(items)} for items in cases],
        "corpus": [
            {"path": path, "sha256": corpus_digest(path), "problems": decisions(corpus_case(path))}
            for path in corpus_paths()
        ],
        "texts": [[text, value, *text_decisions(text, value)] for text, value in texts],
    }


def main() -> None:
    recorded = record()
    # ensure_ascii: the fixture carries lone surrogates and NUL as escapes; NaN and Infinity as Python's json writes them.
    FIXTURE.write_bytes(gzip.compress(json.dumps(recorded, ensure_ascii=True, sort_keys=True).encode("ascii"), mtime=0))
    refused = sum(1 for case in recorded["generated"] if case["problems"])
    print(
        f"{FIXTURE.relative_to(ROOT)}: {len(recorded['generated'])} generated writes ({refused} refused), "
        f"{len(recorded['corpus'])} corpus documents, {len(recorded['texts'])} texts"
    )


if __name__ == "__main__":
    main()
