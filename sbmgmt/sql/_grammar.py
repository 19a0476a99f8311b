"""The Service Bus SQL grammar (filters and rule actions) and its LALR parser.

One grammar serves both: ``filter`` is a single condition, ``action`` is a list of
``_SET`` / ``_REMOVE`` statements separated by commas or semicolons. Conditions and
values share one expression grammar with the usual precedence (_OR < _AND < _NOT <
comparison < + - < * / % < unary sign); whether a sub-expression is a condition
or a value is checked when the tree is compiled, where the error can name the
construct. Keywords are case-insensitive and cannot be used as bare identifiers.
"""

from __future__ import annotations

import functools
from typing import Literal

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from ._errors import SqlSyntaxError

__all__ = ["StartRule", "parse_tree"]

StartRule = Literal["filter", "action"]

_GRAMMAR = r"""
filter: expr
action: statement ((_COMMA | _SEMICOLON) statement)* _SEMICOLON?

?statement: _SET property COMPARISON expr       -> set_statement
          | _REMOVE property                    -> remove_statement

?expr: and_expr
     | expr _OR and_expr                        -> or_op
?and_expr: not_expr
         | and_expr _AND not_expr               -> and_op
?not_expr: predicate
         | _NOT not_expr                        -> not_op
?predicate: sum
          | sum COMPARISON sum                  -> compare
          | sum _IS NULL                        -> is_null
          | sum _IS _NOT NULL                   -> is_not_null
          | sum _IN "(" expr_list ")"           -> in_list
          | sum _NOT _IN "(" expr_list ")"      -> not_in_list
          | sum _LIKE sum [_ESCAPE sum]         -> like
          | sum _NOT _LIKE sum [_ESCAPE sum]    -> not_like
          | _EXISTS "(" property ")"            -> exists
expr_list: expr (_COMMA expr)*

?sum: product
    | sum ADD_OP product                        -> arithmetic
?product: unary
        | product MUL_OP unary                  -> arithmetic
?unary: atom
      | ADD_OP unary                            -> sign
?atom: literal
     | property
     | function
     | "(" expr ")"

function: NAME "(" [expr] ")"
property: name ("." name)?
?name: NAME | DELIMITED_NAME | QUOTED_NAME

?literal: STRING                                -> string
        | INTEGER                               -> integer
        | DECIMAL                               -> decimal
        | TRUE                                  -> true
        | FALSE                                 -> false
        | NULL                                  -> null

_AND: "AND"i
_OR: "OR"i
_NOT: "NOT"i
_IS: "IS"i
_IN: "IN"i
_LIKE: "LIKE"i
_ESCAPE: "ESCAPE"i
_EXISTS: "EXISTS"i
TRUE: "TRUE"i
FALSE: "FALSE"i
NULL: "NULL"i
_SET: "SET"i
_REMOVE: "REMOVE"i
_COMMA: ","
_SEMICOLON: ";"

COMPARISON: "<>" | "!=" | ">=" | "<=" | "=" | ">" | "<"
ADD_OP: "+" | "-"
MUL_OP: "*" | "/" | "%"

NAME: /[^\W\d_]\w*/
DELIMITED_NAME: /\[(?:[^\]]|\]\])*\]/
QUOTED_NAME: /"(?:[^"]|"")*"/
STRING: /'(?:[^']|'')*'/
DECIMAL: /(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+/
INTEGER: /\d+/

%import common.WS
%ignore WS
"""

@functools.cache
def _parser(start: str) -> Lark:
    """The parser of one start rule, so that an error in a filter does not list what only
    an action could accept (LALR merges states that the two would otherwise share); built
    on first use (building both takes about 0.17 s, which every ``sbmgmt`` command paid at
    import whether it read SQL or not)."""
    return Lark(_GRAMMAR, parser="lalr", start=start, propagate_positions=True,
                maybe_placeholders=True)

# What the parser's terminal names mean to a reader of an error message.
_READABLE = {
    "LPAR": "'('", "RPAR": "')'", "_COMMA": "','", "_SEMICOLON": "';'", "DOT": "'.'",
    "EQUAL": "'='", "COMPARISON": "a comparison operator", "ADD_OP": "'+' or '-'",
    "MUL_OP": "'*', '/' or '%'", "NAME": "a property name", "DELIMITED_NAME": "a [name]",
    "QUOTED_NAME": 'a "name"', "STRING": "a string", "INTEGER": "a number",
    "DECIMAL": "a number", "$END": "the end of the expression",
}


def _expected(names: set[str]) -> str:
    readable = sorted({_READABLE.get(name, name.lstrip("_")) for name in names})
    if not readable:
        return ""
    if len(readable) > 8:
        readable = [*readable[:8], "..."]
    return "; expected " + ", ".join(readable)


def _syntax_error(text: str, error: UnexpectedInput) -> SqlSyntaxError:
    line, column = max(error.line, 1), max(error.column, 1)
    if isinstance(error, UnexpectedCharacters):
        return SqlSyntaxError(
            f"unexpected character {error.char!r}",
            expression=text, line=line, column=column, token=error.char,
        )
    if isinstance(error, UnexpectedEOF) or (
        isinstance(error, UnexpectedToken) and error.token.type == "$END"
    ):
        end_line = text.count("\n") + 1
        end_column = len(text) - (text.rfind("\n") + 1) + 1
        return SqlSyntaxError(
            f"unexpected end of expression{_expected(set(error.expected))}",
            expression=text, line=end_line, column=end_column,
        )
    assert isinstance(error, UnexpectedToken)
    token = str(error.token)
    return SqlSyntaxError(
        f"unexpected {token!r}{_expected(set(error.expected))}",
        expression=text, line=line, column=column, token=token,
    )


def parse_tree(text: str, start: StartRule) -> Tree[Token]:
    """Parse ``text`` from ``start``; a syntax error becomes :class:`SqlSyntaxError`."""
    if not text.strip():
        raise SqlSyntaxError("the expression is empty", expression=text, line=1, column=1)
    try:
        return _parser(start).parse(text)
    except UnexpectedInput as exc:
        raise _syntax_error(text, exc) from None
