"""A small ClickHouse SQL lexer: split migration files, and vet read-only queries.

Not a parser. It knows exactly as much of ClickHouse's lexical rules as it needs to find
statement boundaries and function calls: quoted strings and identifiers (with backslash
escapes and doubled quotes), `--` and `# ` line comments, nested `/* */` comments. Where the
engine's rules and this lexer's could disagree (heredoc `$$` strings, a bare `#`, an
unterminated quote), the statement is refused rather than guessed at: a disagreement is how a
second statement would slip past the check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tickwheel.ports.history import HistoryQueryRejected

TokenKind = Literal["word", "string", "ident", "number", "punct", "semicolon"]

#: The statements `HistoryStore.query` accepts (first keyword).
READ_ONLY_STATEMENTS = frozenset(
    {"SELECT", "WITH", "SHOW", "DESCRIBE", "DESC", "EXPLAIN", "EXISTS"}
)

#: Keywords refused anywhere: `INSERT INTO FUNCTION file(...)` and `INTO OUTFILE` write files,
#: and chDB lets both through even with `readonly` set (observed with chDB 4.4).
_FORBIDDEN_WORDS = frozenset({"INSERT", "OUTFILE"})

#: Functions and table functions that reach outside the history database: the filesystem,
#: the network, other servers, child processes, and (chDB's `Python(...)`) the objects of the
#: process that owns the store. Matched as name prefixes, so `s3Cluster`, `urlCluster`,
#: `icebergS3` etc. are covered; a false refusal is preferred to a leak.
_EXTERNAL_FUNCTION_PREFIXES = (
    "file",
    "url",
    "s3",
    "gcs",
    "oss",
    "cosn",
    "hdfs",
    "azure",
    "remote",
    "cluster",
    "mysql",
    "postgres",
    "sqlite",
    "mongo",
    "redis",
    "jdbc",
    "odbc",
    "executable",
    "python",
    "input",
    "iceberg",
    "deltalake",
    "hudi",
    "paimon",
    "hive",
    "arrowflight",
    "ytsaurus",
)


class SqlLexError(ValueError):
    """The text cannot be tokenised unambiguously."""


@dataclass(frozen=True)
class Token:
    kind: TokenKind
    text: str
    start: int
    end: int


def _skip_quoted(sql: str, pos: int, quote: str) -> int:
    """Return the index just past the quoted literal that starts at `pos`."""
    i = pos + 1
    n = len(sql)
    while i < n:
        ch = sql[i]
        if ch == "\\":
            i += 2
            continue
        if ch == quote:
            if i + 1 < n and sql[i + 1] == quote:
                i += 2
                continue
            return i + 1
        i += 1
    raise SqlLexError(f"unterminated {quote} quote starting at offset {pos}")


def _skip_block_comment(sql: str, pos: int) -> int:
    # ClickHouse nests /* */ comments; so must we, or the two would disagree on where
    # the comment ends.
    depth = 0
    i = pos
    n = len(sql)
    while i < n:
        if sql.startswith("/*", i):
            depth += 1
            i += 2
        elif sql.startswith("*/", i):
            depth -= 1
            i += 2
            if depth == 0:
                return i
        else:
            i += 1
    raise SqlLexError(f"unterminated /* comment starting at offset {pos}")


def _skip_line_comment(sql: str, pos: int) -> int:
    # Ending at \r as well as \n can only make us see more code than the engine does.
    i = pos
    while i < len(sql) and sql[i] not in "\r\n":
        i += 1
    return i


def tokenize(sql: str) -> list[Token]:
    """Tokens of `sql`, comments and whitespace dropped. Raises `SqlLexError`."""
    tokens: list[Token] = []
    i = 0
    n = len(sql)
    while i < n:
        ch = sql[i]
        if ch.isspace():
            i += 1
        elif sql.startswith("--", i):
            i = _skip_line_comment(sql, i)
        elif ch == "#":
            if i + 1 < n and sql[i + 1] in " !":
                i = _skip_line_comment(sql, i)
            else:
                raise SqlLexError(f"unexpected '#' at offset {i}")
        elif sql.startswith("/*", i):
            i = _skip_block_comment(sql, i)
        elif ch == "'":
            end = _skip_quoted(sql, i, "'")
            tokens.append(Token("string", sql[i:end], i, end))
            i = end
        elif ch in '"`':
            end = _skip_quoted(sql, i, ch)
            tokens.append(Token("ident", sql[i:end], i, end))
            i = end
        elif ch == "$":
            raise SqlLexError(f"heredoc ($...$) strings are not accepted (offset {i})")
        elif ch.isalpha() or ch == "_":
            j = i + 1
            while j < n and (sql[j].isalnum() or sql[j] == "_"):
                j += 1
            tokens.append(Token("word", sql[i:j], i, j))
            i = j
        elif ch.isdigit():
            j = i + 1
            while j < n and (sql[j].isalnum() or sql[j] in "._"):
                j += 1
            tokens.append(Token("number", sql[i:j], i, j))
            i = j
        elif ch == ";":
            tokens.append(Token("semicolon", ch, i, i + 1))
            i += 1
        else:
            tokens.append(Token("punct", ch, i, i + 1))
            i += 1
    return tokens


def split_statements(sql: str) -> list[str]:
    """The statements of a `.sql` file, without their `;`; comment-only pieces dropped."""
    statements: list[str] = []
    start = 0
    seen_token = False
    for token in tokenize(sql):
        if token.kind == "semicolon":
            if seen_token:
                statements.append(sql[start : token.start].strip())
            start = token.end
            seen_token = False
        else:
            seen_token = True
    if seen_token:
        statements.append(sql[start:].strip())
    return statements


def check_read_only(sql: str) -> None:
    """Refuse anything but one read-only statement that stays inside the database.

    This is the conservative half of the read-only guarantee; the other half is the
    connection's ClickHouse `readonly` setting, which refuses writes and DDL in the engine.
    Raises `HistoryQueryRejected` naming the reason.
    """
    try:
        tokens = tokenize(sql)
    except SqlLexError as exc:
        raise HistoryQueryRejected(sql, str(exc)) from None
    statements: list[list[Token]] = [[]]
    for token in tokens:
        if token.kind == "semicolon":
            statements.append([])
        else:
            statements[-1].append(token)
    statements = [s for s in statements if s]
    if not statements:
        raise HistoryQueryRejected(sql, "the statement is empty")
    if len(statements) > 1:
        raise HistoryQueryRejected(sql, f"{len(statements)} statements given, one accepted")
    statement = statements[0]
    first_word = next((t for t in statement if t.kind != "punct" or t.text != "("), None)
    if first_word is None or first_word.kind != "word":
        raise HistoryQueryRejected(sql, "it does not start with a statement keyword")
    keyword = first_word.text.upper()
    if keyword not in READ_ONLY_STATEMENTS:
        raise HistoryQueryRejected(sql, f"{keyword} statements are not read-only queries")
    for index, token in enumerate(statement):
        if token.kind == "word" and token.text.upper() in _FORBIDDEN_WORDS:
            raise HistoryQueryRejected(sql, f"{token.text.upper()} writes data")
        if token.kind not in ("word", "ident"):
            continue
        # A quoted name (`file`(...)) calls the same function as a bare one.
        name = token.text if token.kind == "word" else token.text[1:-1]
        follower = statement[index + 1] if index + 1 < len(statement) else None
        is_call = follower is not None and follower.kind == "punct" and follower.text == "("
        if is_call and name.lower().startswith(_EXTERNAL_FUNCTION_PREFIXES):
            raise HistoryQueryRejected(sql, f"{name}() reaches outside the history database")
