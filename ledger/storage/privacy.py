"""What text the ledger may keep: the at-rest privacy rules of the storage guard (docs/privacy.md has the table).

:func:`privacy_rule` names the first rule a text breaks — LoopX's own public-safe
patterns, then the stricter :data:`PRIVACY_RULES` (POSIX home/root/mount/workspace
paths and ``file:`` URLs of them, ``~/`` and ``$HOME/``, Windows drive paths,
network share paths, credentials in URLs, ``password=``/``pwd=``-style
assignments, the token formats of maintained secret scanners: GitHub, GitLab, AWS,
Slack, Google, Hugging Face, npm, PyPI, Azure and others, JWTs, PEM private keys).
A text is judged as written and, when it holds ``%`` or a character outside
ASCII, once more as a reader sees it: percent-decoded, NFKC-folded, invisible
characters removed (:func:`unveiled`). :func:`is_credential_field` tells a
credential-named field holding a value (``{"password": "hunter2"}``).

Each rule is screened with substrings every match holds before its pattern runs,
and all rules' substrings are looked for in one pass first: nearly no text holds
any. ``ledger.storage.guard`` applies these rules to every write.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from benchledger.projections.artifacts.safe import LOCAL_PATH_PATTERN, is_public_safe

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
        "note-signing-key",
        "a signed-note signing key (PRIVATE+KEY+…, as `benchledger keygen` writes it)",
        ("private+key+",),
        re.compile(r"PRIVATE\+KEY\+[^\s+]+\+[0-9a-fA-F]{8}\+[A-Za-z0-9+/]{40,}"),
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
    PrivacyRule(
        # A pre-signed URL is a credential: whoever holds it may read (or write) what it signs until it expires.
        "signed-url",
        "a signed URL's signature (?sig=…, X-Goog-Signature=…, Signature=…)",
        ("sig=", "signature="),
        re.compile(r"[?&](?:sig|signature|x-goog-signature|x-amz-signature)=[A-Za-z0-9%+/=_.~-]{16,}", re.IGNORECASE | re.ASCII),
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
# Hangul fillers). tests/perf_equivalence/test_intake_fast_paths.py holds the class to unicodedata's Cf
# and to Unicode's Default_Ignorable_Code_Point.
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
    return isinstance(value, str) and names_credential(key) and _HARMLESS_VALUE.fullmatch(value) is None


def names_credential(key: str) -> bool:
    """Whether ``key`` names a credential (``password``, ``db_password``, ``api-key`` ...), as written or :func:`unveiled`."""
    if "%" in key or not key.isascii():
        key = unveiled(key)
    lowered = key.lower()
    return any(fragment in lowered for fragment in _CREDENTIAL_KEY_SCREEN) and _CREDENTIAL_KEY.fullmatch(lowered.replace("-", "_")) is not None
