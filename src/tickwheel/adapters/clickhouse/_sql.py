"""A small ClickHouse SQL lexer: split migration files, and vet read-only queries.

Not a parser. It knows exactly as much of ClickHouse's lexical rules as it needs to find
statement boundaries and function calls: quoted strings and identifiers (with backslash
escapes and doubled quotes), `--` and `# ` line comments, nested `/* */` comments. Where the
engine's rules and this lexer's could disagree (heredoc `$$` strings, a bare `#`, an
unterminated quote), the statement is refused rather than guessed at: a disagreement is how a
second statement would slip past the check.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

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


def _identifier_name(sql: str, token: Token) -> str:
    """The name a quoted identifier stands for; refuses what ClickHouse would decode.

    ClickHouse decodes backslash escapes in quoted identifiers (`f\\x69le` is `file`,
    `Pyth\\Non` is `Python`), so comparing the raw text would let a forbidden name through.
    Decoding them exactly as the engine does is a second lexer to keep in step; refusing them
    costs nothing a real query needs.
    """
    quote = token.text[0]
    body = token.text[1:-1]
    if "\\" in body:
        raise HistoryQueryRejected(
            sql, f"the quoted identifier {token.text} contains a backslash escape"
        )
    return body.replace(quote + quote, quote)


def _parameter_at(statement: list[Token], index: int) -> tuple[str, str, int] | None:
    """`(name, type, index of the closing brace)` if a `{name:Type}` placeholder starts here."""
    if index + 4 >= len(statement):
        return None
    brace, name, colon, kind, close = statement[index : index + 5]
    if (
        brace.text == "{"
        and name.kind == "word"
        and colon.text == ":"
        and kind.kind == "word"
        and close.text == "}"
    ):
        return name.text, kind.text, index + 4
    return None


def _is_call(statement: list[Token], index: int) -> bool:
    follower = statement[index + 1] if index + 1 < len(statement) else None
    return follower is not None and follower.kind == "punct" and follower.text == "("


def _vet_call(sql: str, name: str) -> None:
    # A qualified name (`db.file`) is refused like its last part would be.
    lowered = name.lower()
    if lowered.startswith(_EXTERNAL_FUNCTION_PREFIXES) or lowered.rsplit(".", 1)[-1].startswith(
        _EXTERNAL_FUNCTION_PREFIXES
    ):
        raise HistoryQueryRejected(sql, f"{name}() reaches outside the history database")


def check_read_only(sql: str, params: Mapping[str, Any] | None = None) -> None:
    """Refuse anything but one read-only statement that stays inside the database.

    This is the conservative half of the read-only guarantee; the other half is the
    connection's ClickHouse `readonly` setting, which refuses writes and DDL in the engine.
    `params` are the values that will be bound: a `{name:Identifier}` placeholder is vetted
    with its value, as the name it becomes. Raises `HistoryQueryRejected` naming the reason.
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
    values = params or {}
    for index, token in enumerate(statement):
        if token.kind == "word" and token.text.upper() in _FORBIDDEN_WORDS:
            raise HistoryQueryRejected(sql, f"{token.text.upper()} writes data")
        if token.kind == "punct" and token.text == "{":
            _check_parameter(sql, statement, index, values)
            continue
        if token.kind == "word":
            name = token.text
        elif token.kind == "ident":
            name = _identifier_name(sql, token)
        else:
            continue
        # A quoted name (`file`(...)) calls the same function as a bare one.
        if _is_call(statement, index):
            _vet_call(sql, name)


def _check_parameter(
    sql: str, statement: list[Token], index: int, values: Mapping[str, Any]
) -> None:
    placeholder = _parameter_at(statement, index)
    if placeholder is None:
        return
    name, kind, close = placeholder
    if kind.lower() != "identifier":
        # Any other type is bound as a value, never as a name.
        return
    value = values.get(name)
    if value is None:
        if _is_call(statement, close):
            raise HistoryQueryRejected(
                sql, f"{{{name}:Identifier}}(...) calls a function whose name is not given"
            )
        return
    if not isinstance(value, str) or any(ch in value for ch in "\\`\"'"):
        raise HistoryQueryRejected(
            sql, f"parameter {name} is an Identifier: a plain name is accepted, got {value!r}"
        )
    if _is_call(statement, close):
        _vet_call(sql, value)
