"""What a persistent ledger agrees to store: the one guard on every way in.

:meth:`Store.append_streams` (ingest, ``ingest_many``, ``import-loopx``, a review
with ``--goal``) and :meth:`Store.insert_verbatim` (``import-ndjson``) call
:func:`refuse_unstorable` before they take the write lock, so a new way into the
store cannot skip it. It refuses the whole call — nothing is written — when any
event, or the metadata stored beside it, breaks a rule:

* **storable text**: no NUL character and no unpaired UTF-16 surrogate (which has
  no UTF-8 form: it could be hashed and stored as an escape, but no command could
  print it) in any string or key;
* **JSON**: every number finite; a payload at most :data:`MAX_PAYLOAD_BYTES` of
  canonical JSON (a batch manifest, benchledger's own list of a batch's members,
  :data:`MAX_MANIFEST_BYTES`), nested at most :data:`MAX_NESTING_DEPTH` levels; ``kind``,
  ``schema_version`` and ``source`` within their column widths;
* **privacy at rest** (docs/privacy.md has the table): no string or key of a
  payload, and no goal id, kind, schema version or source label, may match a
  rule of :data:`PRIVACY_RULES`, and no credential-named field (``password``,
  ``api_key``, ``token`` ...) may hold a value — LoopX's own
  public-safe patterns plus stricter ones (POSIX home/root/mount/workspace paths
  and ``file:`` URLs of them, ``~/`` and ``$HOME/``, Windows drive paths, network
  share paths, credentials in URLs, ``password=``/``pwd=``-style assignments, the
  token formats of a maintained secret scanner: GitHub, GitLab, AWS, Slack, Google,
  Hugging Face, npm, PyPI, Azure and others, JWTs, PEM private keys). A text is
  judged as written and, when it holds ``%`` or a character outside ASCII, once more
  as a reader sees it: percent-decoded, NFKC-folded, invisible characters removed
  (:func:`unveiled`).

Compaction runs first and is LoopX's: a LoopX pattern in a compacted text field
is *dropped* there, exactly as LoopX drops it; whatever still matches a rule here
is *refused*. The guard never rewrites a payload, so what a stored review reduces
is what LoopX would reduce.

Messages name where the problem is (the input, the JSON path) and which rule
fired, never the offending text: a key that itself matches a rule is shown as
``<refused key>``.

The throwaway in-memory ledger of a stateless review is not guarded: it reads
what LoopX reads (NaN, surrogates, paths and all) and stores nothing.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from benchledger.errors import InvalidEvent
from benchledger.projections.artifacts.safe import LOCAL_PATH_PATTERN, is_public_safe
from benchledger.projections.linking import BATCH_KIND

MAX_PAYLOAD_BYTES = 4 * 1024 * 1024
# A batch manifest is benchledger's own list of its members (an id and a kind each):
# one ingest of a 64 MiB NDJSON of small documents lists ~10^5-10^6 of them. It is held
# to this limit instead, which an export line (exchange.MAX_EXPORT_LINE_BYTES) can carry.
MAX_MANIFEST_BYTES = 128 * 1024 * 1024
MAX_NESTING_DEPTH = 64
# Column widths of ``events`` (ledger.storage.schema); checked before writing so that
# SQLite, which ignores them, and PostgreSQL, which enforces them, agree.
COLUMN_LIMITS = {"kind": 64, "schema_version": 128, "source": 64}
# How many problems one refusal names before it counts the rest.
PROBLEMS_SHOWN = 5

# Characters that end a path or a secret value (LoopX's set, with commas and semicolons for prose).
_VALUE = r"""[^\s`'"<>,;]"""
# A redaction such as ``***`` is not a secret, nor is a flag's ``true``/``false``/``none``/``null``.
_NOT_REDACTED = r"(?!\*+(?:[\s`'\"<>,;@]|$))"
_NOT_A_FLAG = r"(?!(?:true|false|none|null)(?:[\s`'\"<>,;]|$))"


@dataclass(frozen=True)
class PrivacyRule:
    """One at-rest rule: a text matching ``pattern`` is refused.

    ``screen`` lists lower-case fragments of which every match holds one: a
    text holding none of them is not searched (nearly all text holds none).
    ``also``, when given, lists characters of which every match holds one too:
    an assignment's ``=`` or ``:`` (many texts hold ``key`` or ``token``, few
    beside an assignment, and these patterns are the slowest to search).
    """

    name: str
    what: str
    screen: tuple[str, ...]
    pattern: re.Pattern[str]
    also: tuple[str, ...] = ()

    def matches(self, text: str, lowered: str) -> bool:
        for fragment in self.screen:  # (a plain loop: a generator costs more than the substring tests)
            if fragment in lowered:
                if self.also and not any(character in text for character in self.also):
                    return False
                return self.pattern.search(text) is not None
        return False


_NAME_PREFIX = r"(?<![A-Za-z0-9])(?:[A-Za-z0-9]+[_.-])*"
_ASSIGN = r"""["']?\s*[=:]\s*["']?"""
# Before a token of a prefix family: no letter or digit (``xhf_…`` is no Hugging Face token).
_TOKEN_START = r"(?<![A-Za-z0-9])"
# A ``pass=`` that reports a verdict, not a password (benchmark data is full of them).
_NOT_A_VERDICT = r"(?!(?:pass(?:ed)?|fail(?:ed)?|yes|no|ok|skip(?:ped)?|error)(?:[\s`'\"<>,;]|$))"

# The credential families below follow the rules of maintained secret scanners, written
# afresh here (prefix, then the token's length and alphabet): gitleaks'
# config/gitleaks.toml (github.com/gitleaks/gitleaks, commit b58d3f102cf3a2c84cb7f923d05c25c9b1aed84b)
# for the token formats and the credential names (its generic-api-key: ``creds``), and
# detect-secrets' keyword and Azure storage plugins (github.com/Yelp/detect-secrets,
# detect_secrets/plugins/keyword.py and azure_storage_key.py, commit
# 5e141933554a0b74e7341841f318be21e895339c) for ``pwd``, ``pass`` and ``AccountKey``.
# A family whose tokens LoopX's own pattern already refuses (OpenAI's and Anthropic's
# ``sk-…``, Stripe's ``sk_live_…``) is not repeated. docs/privacy.md has the table.
PRIVACY_RULES: tuple[PrivacyRule, ...] = (
    PrivacyRule(
        "posix-local-path",
        "a local path (/home/, /root/, /mnt/, /media/, /workspace, /Users/, /Volumes/, /private/, temp dirs)",
        ("/home", "/root", "/mnt", "/media", "/workspace", "/users", "/volumes", "/private", "/tmp", "/var/", "/run/user"),
        re.compile(
            # at the start of a text, after a space or punctuation, or as the path of a file: URL of any host
            r"(?:(?<![\w.~-])|(?<![a-z0-9+.-])file://[^/\s`'\"<>]*)"
            r"/(?:home|root|mnt|media|workspaces?|Users|Volumes|private|tmp|var/tmp|var/folders|var/home|export/home|run/user)"
            r"(?=[/\\\s`'\"<>,;]|$)",
            re.IGNORECASE | re.ASCII,
        ),
    ),
    PrivacyRule(
        "home-relative-path",
        "a home-relative path (~/…, $HOME/…)",
        ("~", "$home", "${home}", "%userprofile%", "%homepath%"),
        re.compile(r"(?<![\w.~/-])~[\w.-]*/|(?ai:\$(?:HOME|\{HOME\})|%(?:USERPROFILE|HOMEPATH)%)[/\\]"),
    ),
    PrivacyRule("windows-drive-path", "a Windows drive path (C:\\…)", (":\\", ":/"), re.compile(r"(?<![\w+.-])[A-Za-z]:[\\/]")),
    PrivacyRule(
        "unc-path",
        "a network share path (\\\\server\\…, //server/…)",
        ("\\\\", "//"),
        re.compile(
            r"\\\\[\w.$-]+\\"
            # //server/share at the start of a text or after a space or punctuation (not a URL's scheme://host/)
            r"|(?<![^\s`'\"<>,;=(\[{|])//[\w.$-]+/[\w.$-]"
            r"|(?<![A-Za-z0-9+.-])(?ai:file://(?!localhost/))[\w.$-]+/"
        ),
    ),
    PrivacyRule(
        "url-credentials",
        "a URL with credentials (scheme://user:password@host)",
        ("://",),
        re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/@:`'\"<>]*:" + _NOT_REDACTED + r"[^\s/@`'\"<>]+@"),
        also=("@",),
    ),
    PrivacyRule(
        "password-assignment",
        "a password or secret assignment (password=…, pwd=…, secret: …)",
        ("pass", "pwd", "secret", "authorization"),
        re.compile(
            _NAME_PREFIX
            + r"(?:(?:password|passwd|passphrase|secret|authorization)s?" + _ASSIGN + _NOT_REDACTED + _NOT_A_FLAG
            # ``PWD=/srv/app`` is a shell's working directory, ``Pwd=s3cret;`` an ODBC password
            + r"|pwd" + _ASSIGN + _NOT_REDACTED + _NOT_A_FLAG + r"(?![/~.$%])"
            + r"|pass" + _ASSIGN + _NOT_REDACTED + _NOT_A_FLAG + _NOT_A_VERDICT + r"(?=" + _VALUE + r"*[A-Za-z])"
            + r")" + _VALUE + "+",
            re.IGNORECASE | re.ASCII,
        ),
        also=("=", ":"),
    ),
    PrivacyRule(
        "credential-assignment",
        "a token or key assignment (api_key=…, token=…, AccountKey=…)",
        ("token", "key", "credential", "creds"),
        re.compile(
            _NAME_PREFIX
            + r"(?:token|api[_-]?key|apikey|access[_-]?key|secret[_-]?key|private[_-]?key|auth[_-]?key"
            + r"|account[_-]?key|shared[_-]?access[_-]?key|credentials?|creds)"
            + _ASSIGN
            + _NOT_REDACTED
            + r"(?=" + _VALUE + r"*[A-Za-z])" + _VALUE + "{8,}",
            re.IGNORECASE | re.ASCII,
        ),
        also=("=", ":"),
    ),
    PrivacyRule(
        "github-token",
        "a GitHub token (ghp_…, gho_…, github_pat_…)",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{16,})"),
    ),
    PrivacyRule(
        "aws-access-key",
        "an AWS access key id (AKIA…, ASIA…)",
        ("akia", "asia", "abia", "acca", "a3t"),
        re.compile(r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
    ),
    PrivacyRule(
        "slack-token",
        "a Slack token or webhook (xoxb-…, xapp-…, hooks.slack.com/services/…)",
        ("xox", "xapp-", "hooks.slack.com/"),
        re.compile(
            r"\bxox[abposre]-[A-Za-z0-9-]{10,}|\bxoxe\.xox[bp]-|\bxapp-[0-9]-[A-Za-z0-9-]{10,}"
            r"|hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{20,}"
        ),
    ),
    PrivacyRule("google-api-key", "a Google API key (AIza…)", ("aiza",), re.compile(r"\bAIza[0-9A-Za-z_-]{30,}")),
    PrivacyRule(
        "gitlab-token",
        "a GitLab token (glpat-…, glptt-…, glrt-…)",
        ("glpat-", "glptt-", "gldt-", "glrt-", "glcbt-", "glft-", "glsoat-", "glimt-", "glagent-", "gloas-", "glffct-", "gr1348941"),
        re.compile(r"\bglpat-[0-9A-Za-z_-]{16,}|\b(?:gl(?:ptt|dt|rt|cbt|ft|soat|imt|agent|oas|ffct)-|GR1348941)[0-9A-Za-z_-]{20,}"),
    ),
    PrivacyRule("jwt", "a JSON Web Token (eyJ….eyJ….…)", ("eyj",), re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.")),
    PrivacyRule(
        "pem-private-key",
        "a PEM private key (-----BEGIN … PRIVATE KEY-----)",
        ("-----begin",),
        re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"),
    ),
    PrivacyRule(
        "huggingface-token",
        "a Hugging Face token (hf_…, api_org_…)",
        ("hf_", "api_org_"),
        re.compile(_TOKEN_START + r"(?:hf|api_org)_[A-Za-z0-9]{30,}"),
    ),
    PrivacyRule("npm-token", "an npm access token (npm_…)", ("npm_",), re.compile(_TOKEN_START + r"npm_[A-Za-z0-9]{36}")),
    PrivacyRule(
        "pypi-token", "a PyPI upload token (pypi-AgEI…)", ("pypi-ageichlwas5vcmc",), re.compile(r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}")
    ),
    PrivacyRule(
        "azure-client-secret",
        "an Azure AD client secret (…8Q~…)",
        ("q~",),
        re.compile(r"(?<![A-Za-z0-9_~.])[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}"),
    ),
    PrivacyRule(
        "service-token",
        "an access token of a known service (Databricks, DigitalOcean, Shopify, SendGrid, Stripe, Vault, Sentry, Grafana, age)",
        ("dapi", "_v1_", "shp", "sg.", "rk_live_", "rk_test_", "rk_prod_", "hvs.", "hvb.", "sntry", "glc_", "glsa_", "eyjrijoi", "age-secret-key-1"),
        re.compile(
            _TOKEN_START
            + r"(?:dapi[a-f0-9]{32}"
            r"|do[opr]_v1_[a-f0-9]{64}"
            r"|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"
            r"|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"
            r"|rk_(?:live|test|prod)_[A-Za-z0-9]{10,}"
            r"|hv[sb]\.[A-Za-z0-9_-]{90,}"
            r"|sntry[su]_[A-Za-z0-9+/=_-]{40,}"
            r"|glc_[A-Za-z0-9+/]{32,}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|eyJrIjoi[A-Za-z0-9]{70,}"
            r"|AGE-SECRET-KEY-1[0-9A-Z]{58})"
        ),
    ),
)
# LoopX's own patterns (common-inputs.md §2.2), named like the rules above.
LOOPX_LOCAL_PATH = "loopx-local-path"
LOOPX_SECRET = "loopx-secret"
_LOOPX_WHAT = {
    LOOPX_LOCAL_PATH: "a local path of LoopX's filter (/Users/, /Volumes/, /var/folders/, /tmp/, /private/tmp/)",
    LOOPX_SECRET: "a secret of LoopX's filter (bearer …, access_key=…, sk-…, token=…)",
}


def privacy_rule(text: str) -> str | None:
    """The name of the first privacy rule ``text`` breaks, or ``None`` when the ledger may keep it.

    The text is judged as written and, when it holds a ``%`` or a character
    outside ASCII, as a reader sees it (:func:`unveiled`): a secret spelled
    ``postgresql%3A%2F%2Fadmin%3As3cret%40db``, with fullwidth colons or with
    zero-width spaces inside is refused like the plain one.
    """
    rule = _rule_broken(text)
    if rule is None and ("%" in text or not text.isascii()):
        plain = unveiled(text)
        if plain != text:
            rule = _rule_broken(plain)
    return rule


def _rule_broken(text: str) -> str | None:
    if not is_public_safe(text):
        return LOOPX_LOCAL_PATH if LOCAL_PATH_PATTERN.search(text) else LOOPX_SECRET
    lowered = text.lower()
    if _ANY_SCREEN_FRAGMENT.search(lowered) is None:
        return None
    for rule in PRIVACY_RULES:
        if rule.matches(text, lowered):
            return rule.name
    return None


def _trie_pattern(words: Iterable[str]) -> str:
    """A pattern matching any of ``words``, written as a trie (``gl(?:pat-|ptt-)``): the regex engine tries one
    alternative per first character at a position, where a flat alternation tries every word."""
    tree: dict[str, dict] = {}
    for word in words:
        node = tree
        for character in word:
            node = node.setdefault(character, {})
        node[""] = {}

    def alternatives(node: dict[str, dict]) -> str:
        branches = [re.escape(character) + alternatives(child) for character, child in sorted(node.items()) if character]
        if not branches:
            return ""
        pattern = branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"
        return f"(?:{pattern})?" if "" in node else pattern

    return alternatives(tree)


# Every screen fragment of every rule in one pattern: one pass over a text tells whether it holds any
# of them (nearly no text does; those that do are screened rule by rule).
_ANY_SCREEN_FRAGMENT = re.compile(_trie_pattern({fragment for rule in PRIVACY_RULES for fragment in rule.screen}))


# Characters that show nothing: format characters (Unicode category Cf: zero-width
# spaces and joiners, bidirectional controls, the soft hyphen, tags) and the other
# default-ignorable code points (variation selectors, the combining grapheme joiner,
# Hangul fillers). tests/test_intake_fast_paths.py holds the class to unicodedata's Cf.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    "\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
# Percent-encoding applied this many times over is still decoded (``%252F`` is ``/`` encoded twice).
_DECODING_ROUNDS = 3


def unveiled(text: str) -> str:
    """``text`` as a reader sees it: compatibility forms folded (NFKC: fullwidth ``：`` is ``:``),
    invisible characters (:data:`_INVISIBLE`) removed and percent-escapes decoded, until nothing
    changes (at most :data:`_DECODING_ROUNDS` decodings).

    The guard screens this as well as the text itself; what it stores is the text as given.
    """
    for _ in range(_DECODING_ROUNDS):
        folded = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))
        decoded = unquote(folded) if "%" in folded else folded
        if decoded == text:
            return text
        text = decoded
    return _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))


def rule_description(rule_name: str) -> str:
    """What a rule refuses, as messages name it."""
    return _LOOPX_WHAT.get(rule_name) or next(rule.what for rule in PRIVACY_RULES if rule.name == rule_name)


# -- credential fields ---------------------------------------------------------------

CREDENTIAL_FIELD = "credential-field"
# A key that names a credential (matched on the key in lower case, "-" read as "_"):
# ``password``, ``db_password``, ``api_key``, ``github_token``, ``sk`` ... but not
# ``task`` or ``max_tokens``.
_CREDENTIAL_KEY = re.compile(
    r"(?:[a-z0-9]+[_.])*(?:password|passwd|passphrase|secrets?|token|api_?key|access_?key|secret_?key|private_?key"
    r"|account_?key|shared_?access_?key|client_secret|credentials?|creds|authorization|ak|sk)",
    re.ASCII,
)
# Fragments one of which every credential key holds (the cheap test before the pattern).
_CREDENTIAL_KEY_SCREEN = ("pass", "secret", "token", "key", "cred", "authorization", "ak", "sk")
# Values that say nothing secret: empty, a flag word, a redaction, a number.
_HARMLESS_VALUE = re.compile(r"\s*(?:|true|false|none|null|\*+|[-+]?[0-9]+(?:\.[0-9]+)?)\s*", re.IGNORECASE | re.ASCII)


def is_credential_field(key: str, value: Any) -> bool:
    """Whether ``key: value`` is a credential-named field holding a string value (``{"password": "hunter2"}``)."""
    return isinstance(value, str) and _names_credential(key) and _HARMLESS_VALUE.fullmatch(value) is None


def _names_credential(key: str) -> bool:
    """Whether ``key`` names a credential (``password``, ``db_password``, ``api-key`` ...), as written or :func:`unveiled`."""
    if "%" in key or not key.isascii():
        key = unveiled(key)
    lowered = key.lower()
    return any(fragment in lowered for fragment in _CREDENTIAL_KEY_SCREEN) and _CREDENTIAL_KEY.fullmatch(lowered.replace("-", "_")) is not None


# -- walking a payload -----------------------------------------------------------------

_KEY, _VALUE_TEXT = "key", "value"


def _texts(payload: Any) -> tuple[list[str], bool]:
    """Every string and key of a payload (the fast screen joins them), and whether it holds a credential field."""
    texts: list[str] = []
    credential = False
    stack = [payload]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            texts.append(node)
        elif isinstance(node, dict):
            for key, value in node.items():
                key = str(key)
                texts.append(key)
                if isinstance(value, str):
                    texts.append(value)
                    credential = credential or is_credential_field(key, value)
                elif isinstance(value, (dict, list)):
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(item for item in node if isinstance(item, (str, dict, list)))
    return texts, credential


def _located(payload: Any) -> Iterator[tuple[str, Any, str]]:
    """``(where, node, role)`` for every value (role value) and key of a payload, and each credential field (role ``credential-field``).

    A key that breaks a rule (or holds a NUL or surrogate) is not spelled in
    the paths below it: messages never repeat what they refuse.
    """
    stack: list[tuple[Any, str]] = [(payload, "$")]
    while stack:
        node, where = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                key = str(key)
                yield where, key, _KEY
                child = f"{where}.{key if unprintable(key) is None and privacy_rule(key) is None else '<refused key>'}"
                if is_credential_field(key, value):
                    yield child, value, CREDENTIAL_FIELD
                stack.append((value, child))
        elif isinstance(node, list):
            stack.extend((item, f"{where}[{index}]") for index, item in enumerate(node))
        else:
            yield where, node, _VALUE_TEXT


NUL_CHARACTER = "a NUL character"
LONE_SURROGATE = "an unpaired UTF-16 surrogate"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# The JSON escape of a UTF-16 surrogate, \\ud800 to \\udfff, in any case: the only way JSON text
# can carry one (UTF-8 cannot), and how canonical JSON writes a lone one (ledger.storage.canonical).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def may_hold_unprintable(json_text: str) -> bool:
    """Whether JSON text may decode to an :func:`unprintable` string: only a ``\\u0000`` or a surrogate escape makes one.

    A cheap screen before :func:`unprintable_in` decides (the escape may follow an escaped
    backslash, and a surrogate in a valid pair is no problem).
    """
    return "\\" in json_text and ("\\u0000" in json_text or _SURROGATE_ESCAPE.search(json_text) is not None)


def unprintable(text: str) -> str | None:
    """What keeps ``text`` from being stored and printed as text (:data:`NUL_CHARACTER`, :data:`LONE_SURROGATE`), or ``None``."""
    if "\x00" in text:
        return NUL_CHARACTER
    if _LONE_SURROGATE.search(text):
        return LONE_SURROGATE
    return None


def unprintable_in(value: Any) -> str | None:
    """:func:`unprintable` over every string and key of a decoded JSON value (a NUL anywhere is named first)."""
    texts, _ = _texts(value)
    return unprintable(_SEPARATOR.join(texts))


# Separates the texts of a payload for one screen of them all. A double quote ends
# every path or secret value the rules match, is no word character, and no rule's
# screen fragment holds it: a match inside one text is a match in the joined text.
_SEPARATOR = '"'


def nesting_depth(value: Any) -> int:
    """Nesting depth of a decoded JSON value, without recursion (stops counting past the limit)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Iterable[Any] = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_NESTING_DEPTH:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def payload_problems(payload: Any, body: str, *, limit: int = MAX_PAYLOAD_BYTES) -> list[tuple[str, str]]:
    """Why ``payload`` (whose canonical JSON is ``body``) may not be stored, as ``(place, problem)``; empty when it may.

    Each test is screened on ``body`` first (:func:`_may_break_a_rule`), so a
    storable payload costs a few substring searches and one privacy screen of
    the texts not seen before; the walk below decides wherever a screen fires.
    """
    problems: list[tuple[str, str]] = []
    if len(body) > limit // 4 and len(body.encode("utf-8", "surrogatepass")) > limit:
        problems.append(("the payload", f"is larger than the {limit}-byte limit as canonical JSON"))
    if body.count("{") + body.count("[") > MAX_NESTING_DEPTH and nesting_depth(payload) > MAX_NESTING_DEPTH:
        problems.append(("the payload", f"is nested deeper than the {MAX_NESTING_DEPTH}-level limit"))
    non_finite = "NaN" in body or "Infinity" in body
    if not (non_finite or may_hold_unprintable(body) or _may_break_a_rule(payload, body)):
        return problems
    found: set[tuple[str, str]] = set()
    for where, node, role in _located(payload):
        if role == CREDENTIAL_FIELD:
            found.add((where, f"is a credential-named field with a value [{CREDENTIAL_FIELD}]"))
        elif isinstance(node, float):
            if not math.isfinite(node):
                found.add((where, "is NaN or infinite; the ledger stores only finite numbers"))
        elif isinstance(node, str):
            place = f"a key of {where}" if role == _KEY else where
            reason = unprintable(node)
            if reason:
                found.add((place, f"contains {reason}"))
            rule = privacy_rule(node)
            if rule is not None:
                found.add((place, f"holds {rule_description(rule)} [{rule}]"))
    return problems + sorted(found)


# Texts that broke no rule and named no credential when last screened: most keys and
# many values recur in every payload of a kind, and are not screened again. Emptied
# when full, so that texts seen once (ids, hashes) cannot grow it without bound.
_SCREENED_CLEAN: set[str] = set()
_SCREENED_CLEAN_LIMIT = 1 << 16


def _may_break_a_rule(payload: Any, body: str) -> bool:
    """Whether a string or key of ``payload`` may break a privacy rule, or a field may be a credential (``False``: none does).

    Without a backslash in ``body`` no string of it is escaped, so splitting it
    at its double quotes gives every key and string value exactly (in the odd
    places; a key that is not a string is written as JSON writes it, and no
    rule matches ``true``, ``null``, ``NaN`` or a number). Otherwise the
    payload is walked for its texts. Texts not screened before are screened
    together, joined by :data:`_SEPARATOR`; one that names a credential (as a
    key it would make a credential field) is left to the walk.
    """
    if "\\" in body:
        texts, credential = _texts(payload)
        return credential or privacy_rule(_SEPARATOR.join(texts)) is not None
    unseen = set(body.split('"')[1::2])
    unseen.difference_update(_SCREENED_CLEAN)
    if not unseen:
        return False
    if any(_names_credential(text) for text in unseen) or privacy_rule(_SEPARATOR.join(unseen)) is not None:
        return True
    if len(_SCREENED_CLEAN) + len(unseen) > _SCREENED_CLEAN_LIMIT:
        _SCREENED_CLEAN.clear()
    _SCREENED_CLEAN.update(unseen)
    return False


def metadata_problems(name: str, value: str | None) -> list[str]:
    """Why a stored column of an event (``goal_id``, ``kind``, ``schema_version``, ``source``) may not be stored."""
    if value is None:
        return []
    limit = COLUMN_LIMITS.get(name)
    if limit is not None and len(value) > limit:
        return [f"{name} is {len(value)} characters, longer than the {limit} the ledger stores"]
    reason = unprintable(value)
    if reason:
        return [f"{name} contains {reason}"]
    rule = privacy_rule(value)
    return [f"{name} holds {rule_description(rule)} [{rule}]"] if rule else []


@dataclass(frozen=True)
class Storable:
    """One event as the guard sees it: its stored columns, its payload and where it came from (for messages)."""

    goal_id: str
    kind: str
    schema_version: str | None
    source: str
    payload: Any
    body: str
    origin: str | None = None


def storage_problems(items: Iterable[Storable]) -> list[tuple[str, str]]:
    """Every problem of ``items`` (module docstring) as ``(where, problem)``: the input, then what is wrong in it."""
    problems: list[tuple[str, str]] = []
    checked: set[tuple[str, str]] = set()  # goal ids and sources, each tested once
    column_problems: dict[tuple[str, str | None], list[str]] = {}  # kinds and schema versions, each tested once
    for item in items:
        where = item.origin or f"this {item.kind}"
        for name, value in (("goal_id", item.goal_id), ("source", item.source)):
            if (name, value) not in checked:
                checked.add((name, value))
                problems += [("the write", p) for p in metadata_problems(name, value)]
        for column in (("kind", item.kind), ("schema_version", item.schema_version)):
            if column not in column_problems:
                column_problems[column] = metadata_problems(*column)
            problems += [(where, p) for p in column_problems[column]]
        problems += [(where, f"{place} of this {item.kind} {p}") for place, p in payload_problems(item.payload, item.body, limit=_payload_limit(item.kind))]
    return problems


def _payload_limit(kind: str) -> int:
    return MAX_MANIFEST_BYTES if kind == BATCH_KIND else MAX_PAYLOAD_BYTES


def refuse_unstorable(items: Iterable[Storable]) -> None:
    """Raise :class:`UnstorableContent` when any of ``items`` may not be stored; the store calls it on every write."""
    problems = storage_problems(items)
    if problems:
        raise UnstorableContent(problems)


class UnstorableContent(InvalidEvent):
    """The ledger refused to store what a write held (exit 1, as for any input the ledger refuses); nothing was written.

    ``problems`` lists every one as ``(where, problem)``; ``str()`` names the first few on one line.
    """

    def __init__(self, problems: Sequence[tuple[str, str]]) -> None:
        shown = "; ".join(f"{where}: {problem}" for where, problem in problems[:PROBLEMS_SHOWN])
        more = f"; and {len(problems) - PROBLEMS_SHOWN} more" if len(problems) > PROBLEMS_SHOWN else ""
        super().__init__(f"{shown}{more}; nothing was written (what the ledger refuses: docs/privacy.md)")
        self.problems = list(problems)
