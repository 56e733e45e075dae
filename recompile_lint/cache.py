"""The on-disk cache: per-file facts, call sites, and the results of whole runs.

Facts are keyed by content hash, tool version and facts schema: a run reads each unchanged
file's facts back instead of parsing it. A run result is keyed by the linter's code, the
settings, the paths named and every project file's content digest: a second run over an
unchanged tree returns it without any analysis (``RunCache``). The cache is an optimisation
only: a cache that cannot be created, read or written (read-only checkout, full disk, damaged,
forged or foreign entries) silently behaves as no cache.

The cache sits in the tree being linted, so everything in it is treated as written by whoever
wrote the tree:

- Nothing in it can run code when read: entries are JSON, decoded into our own frozen
  dataclasses by one codec driven by the dataclasses' field types (``encode``/``decode``),
  which checks the type of every field; anything else is a miss.
- Nothing in it is believed unless this user wrote it: every file starts with an HMAC-SHA256
  of its kind, name and content under a per-user key (``user_key``: 32 random bytes in the
  user's cache directory, mode 0600, never inside a project). A committed, copied or edited
  entry fails the check and is a miss; so is a cache directory whose ``CACHEDIR.TAG`` does not
  carry this user's mark (then the user's own cache directory is used instead).
- Nothing outside it is touched: every directory is opened with ``O_NOFOLLOW`` relative to its
  parent's descriptor and every file is opened, created and renamed relative to its
  directory's descriptor without following links, so a symbolic link planted for a directory,
  an entry or ``CACHEDIR.TAG`` is never followed. Only files that carry this user's HMAC are
  ever deleted (stale entries), and only directories the cache made and emptied.

Layout: ``<root>/.recompile-lint-cache/`` holds ``CACHEDIR.TAG`` (the standard tag, with this
user's mark), a ``.gitignore`` (``*``: it is never committed), one ``facts-*`` directory per
tool version and facts schema (call sites collected per file in its ``calls/``), one
``runs-*`` directory per version of the linter's code with the last results, and
``file-digests.json`` (content digests by file status, see ``RunCache``). Deleting the
directory is always safe.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import hmac
import itertools
import json
import os
import stat
import sys
import types
import typing
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Sequence

from recompile_lint import __version__
from recompile_lint.analysis import measured

if TYPE_CHECKING:
    from recompile_lint.analysis.facts import ModuleFacts

CACHE_DIR_NAME = ".recompile-lint-cache"
GITIGNORE_TEXT = "# Created by recompile-lint; safe to delete.\n*\n"
CACHEDIR_SIGNATURE = "Signature: 8a477f597d28d172789f06886806bc55\n"
CACHEDIR_TAG = CACHEDIR_SIGNATURE + "# This directory holds recompile-lint's cache; backup tools may skip it.\n"
_OWNER_PREFIX = "# recompile-lint owner "

# Entries already read, by entry path: kept only by a resident server (``server``), which fills
# it between commands. An entry's name is a digest of the content, path and module it holds
# facts of, under a directory named by the facts schema, so what it held once it always holds.
resident: dict[str, Any] | None = None
# The facts directories this process has opened (what a resident server reads next).
opened_directories: set[str] = set()


def _schema_fingerprint() -> str:
    """A digest of the code that decides what facts hold, so editing it never reads stale facts.

    The version string alone does not change between development commits; the source of
    ``facts.py`` (and the index's module naming, and the call-site collector) does.
    """
    digest = hashlib.blake2b(digest_size=8)
    digest.update(__version__.encode())
    digest.update(f"{sys.implementation.name}-{sys.version_info[0]}.{sys.version_info[1]}".encode())
    here = Path(__file__).resolve().parent / "analysis"
    for name in ("facts.py", "parsing.py", "index.py", "callsites.py"):
        try:
            digest.update((here / name).read_bytes())
        except OSError:
            digest.update(name.encode())
    digest.update(Path(__file__).read_bytes())  # the codec and the entry format
    return digest.hexdigest()


def content_digest(data: bytes) -> str:
    """The digest that names a file's content (the run cache's table, a server's memory)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _path_bytes(path: str) -> bytes:
    """A path as the bytes the file system knows it by (names that are not UTF-8 included)."""
    return os.fsencode(path)


# ---- the codec: our dataclasses <-> JSON values ------------------------------------------------


class Invalid(ValueError):
    """Data that does not decode into the type asked for (a damaged or foreign entry)."""


class UnsupportedType(TypeError):
    """A field type the codec cannot store; raised when the codec for a class is built."""


# Joins the strings of a sequence stored as one string (see ``_sequence_codec``).
_SEPARATOR = " "
Encoder = Callable[[Any], Any]
Decoder = Callable[[Any], Any]
_codecs: dict[Any, tuple[Encoder, Decoder]] = {}


def encode(value: Any, kind: Any) -> Any:
    """``value`` (of type ``kind``) as plain JSON data: lists, strings, numbers, booleans, null."""
    return codec_for(kind)[0](value)


def decode(data: Any, kind: Any) -> Any:
    """The value of type ``kind`` that ``data`` encodes; ``Invalid`` when it does not."""
    try:
        return codec_for(kind)[1](data)
    except Invalid:
        raise
    except (TypeError, ValueError, KeyError, IndexError, RecursionError) as exc:
        raise Invalid(str(exc)) from exc


def codec_for(kind: Any) -> tuple[Encoder, Decoder]:
    """(encoder, decoder) for a type: ``str``, ``int``, ``float``, ``bool``, ``None``, an
    ``Enum``, a dataclass, ``tuple[X, ...]``, ``tuple[X, Y]``, ``frozenset[X]``, ``list[X]``,
    ``dict[K, V]`` and unions of these. Dataclass fields whose name starts with ``_`` are
    derived data (lookup tables): they are not stored and decode to their default. Any other
    type raises ``UnsupportedType`` naming it."""
    found = _codecs.get(kind)
    if found is None:
        found = _build(kind)
    return found


def _check(expected: type) -> tuple[Encoder, Decoder]:
    def encode_scalar(value: Any) -> Any:
        if type(value) is not expected:
            raise TypeError(f"expected {expected.__name__}, got {type(value).__name__}")
        return value

    def decode_scalar(data: Any) -> Any:
        if type(data) is not expected:
            raise Invalid(f"expected {expected.__name__}, got {type(data).__name__}")
        return data

    return encode_scalar, decode_scalar


def _build(kind: Any) -> tuple[Encoder, Decoder]:
    if kind in (str, int, bool):
        result = _check(kind)
    elif kind is float:
        result = _float_codec()
    elif kind is None or kind is type(None):
        result = _check(type(None))
    elif isinstance(kind, type) and issubclass(kind, enum.Enum):
        result = _enum_codec(kind)
    elif isinstance(kind, type) and dataclasses.is_dataclass(kind):
        return _dataclass_codec(kind)
    else:
        origin, args = typing.get_origin(kind), typing.get_args(kind)
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            result = _sequence_codec(codec_for(args[0]), tuple, args[0])
        elif origin is tuple and args and Ellipsis not in args:
            result = _fixed_tuple_codec([codec_for(arg) for arg in args])
        elif origin is frozenset and len(args) == 1:
            result = _sequence_codec(codec_for(args[0]), frozenset, args[0])
        elif origin is list and len(args) == 1:
            result = _sequence_codec(codec_for(args[0]), list, args[0])
        elif origin is dict and len(args) == 2:
            result = _dict_codec(codec_for(args[0]), codec_for(args[1]))
        elif origin in (typing.Union, types.UnionType):
            result = _union_codec(args)
        else:
            raise UnsupportedType(f"the cache cannot store values of type {kind!r}")
    _codecs[kind] = result
    return result


def _float_codec() -> tuple[Encoder, Decoder]:
    def encode_float(value: Any) -> Any:
        if type(value) is not float:
            raise TypeError(f"expected float, got {type(value).__name__}")
        return value

    def decode_float(data: Any) -> Any:
        if type(data) is float:
            return data
        if type(data) is int:  # JSON writes 1e16 as an integer-looking number on some encoders
            return float(data)
        raise Invalid(f"expected float, got {type(data).__name__}")

    return encode_float, decode_float


def _enum_codec(kind: type[enum.Enum]) -> tuple[Encoder, Decoder]:
    members = {member.value: member for member in kind}
    if not all(type(value) in (str, int) for value in members):
        raise UnsupportedType(f"the cache stores enums of str or int values only, not {kind!r}")

    def encode_enum(value: Any) -> Any:
        if type(value) is not kind:
            raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")
        return value.value

    def decode_enum(data: Any) -> Any:
        if type(data) not in (str, int) or data not in members:
            raise Invalid(f"not a {kind.__name__}: {data!r}")
        return members[data]

    return encode_enum, decode_enum


def _scalar_type(kind: Any) -> type | None:
    """The Python type of a scalar field whose JSON value is stored as it is (None for others)."""
    return kind if kind in (str, int, bool) else None


def _optional_scalar(kind: Any) -> type | None:
    """For ``T | None`` of a scalar type T: T, else None."""
    if typing.get_origin(kind) not in (typing.Union, types.UnionType):
        return None
    args = [arg for arg in typing.get_args(kind) if arg is not type(None)]
    return _scalar_type(args[0]) if len(args) == 1 and len(typing.get_args(kind)) == 2 else None


def _empty_of(kind: Any) -> Any:
    """The empty value of an immutable container type (``tuple[...]``, ``frozenset[...]``),
    which every empty one may share; None for other types."""
    origin = typing.get_origin(kind)
    if origin is tuple and typing.get_args(kind)[1:] == (Ellipsis,):
        return ()
    if origin is frozenset:
        return frozenset()
    return None


def _uniform_tuple(kind: Any) -> type | None:
    """For ``tuple[T, T, ...]`` of one scalar type T (``tuple[str, str]``): T, else None."""
    if typing.get_origin(kind) is not tuple:
        return None
    args = typing.get_args(kind)
    if not args or Ellipsis in args or len(set(args)) != 1:
        return None
    return _scalar_type(args[0])


def _sequence_codec(item: tuple[Encoder, Decoder], container: type, item_type: Any = None) -> tuple[Encoder, Decoder]:
    encode_item, decode_item = item
    scalar = _scalar_type(item_type)
    pair_type = _uniform_tuple(item_type)
    pair_size = len(typing.get_args(item_type)) if pair_type is not None else 0
    allowed = frozenset({scalar or pair_type})
    lists = frozenset({list})
    sizes = frozenset({pair_size})

    def encode_sequence(value: Any) -> Any:
        if type(value) is not container:
            raise TypeError(f"expected {container.__name__}, got {type(value).__name__}")
        return [encode_item(element) for element in value]

    # Sequences of strings (names, identifiers) and of string pairs (import tables) are most
    # of what facts hold: a non-empty one is stored as one string joined by a space (when no
    # element holds one: names never do), which JSON reads at a fraction of the cost of a list
    # of strings, and which splits back without a type check per element. Other scalars and
    # uniform tuples are checked in bulk, by C loops.
    if scalar is str:

        def encode_strings(value: Any) -> Any:
            if type(value) is not container:
                raise TypeError(f"expected {container.__name__}, got {type(value).__name__}")
            if value and set(map(type, value)) <= allowed:
                joined = _SEPARATOR.join(value)
                # Joined only when no element holds the separator, and never to "" (which
                # the decoder could not tell from [""]).
                if joined and joined.count(_SEPARATOR) == len(value) - 1:
                    return joined
            return [encode_item(element) for element in value]

        def decode_strings(data: Any) -> Any:
            if type(data) is str:
                return container(data.split(_SEPARATOR))
            if type(data) is not list or not set(map(type, data)) <= allowed:
                raise Invalid("expected a list of str")
            return container(data)

        return encode_strings, decode_strings
    if scalar is not None:

        def decode_scalars(data: Any) -> Any:
            if type(data) is not list or not set(map(type, data)) <= allowed:
                raise Invalid(f"expected a list of {scalar.__name__}")
            return container(data)

        return encode_sequence, decode_scalars
    if pair_type is str:

        def encode_string_tuples(value: Any) -> Any:
            if type(value) is not container:
                raise TypeError(f"expected {container.__name__}, got {type(value).__name__}")
            items = [encode_item(element) for element in value]
            if items:
                joined = _SEPARATOR.join(itertools.chain.from_iterable(items))
                if joined and joined.count(_SEPARATOR) == len(items) * pair_size - 1:
                    return joined
            return items

        def decode_string_tuples(data: Any) -> Any:
            if type(data) is str:
                parts = data.split(_SEPARATOR)
                if len(parts) % pair_size:
                    raise Invalid(f"expected {pair_size}-item tuples")
                return container(zip(*[iter(parts)] * pair_size))
            return decode_pairs(data)

    if pair_type is not None:

        def decode_pairs(data: Any) -> Any:
            if (
                type(data) is not list
                or not set(map(type, data)) <= lists
                or not set(map(len, data)) <= sizes
                or not set(map(type, itertools.chain.from_iterable(data))) <= allowed
            ):
                raise Invalid(f"expected a list of {pair_size}-item lists of {pair_type.__name__}")
            return container(map(tuple, data))

        if pair_type is str:
            return encode_string_tuples, decode_string_tuples
        return encode_sequence, decode_pairs

    def decode_sequence(data: Any) -> Any:
        if type(data) is not list:
            raise Invalid(f"expected a list for a {container.__name__}, got {type(data).__name__}")
        return container([decode_item(element) for element in data])

    return encode_sequence, decode_sequence


def _fixed_tuple_codec(items: list[tuple[Encoder, Decoder]]) -> tuple[Encoder, Decoder]:
    encoders = [encoder for encoder, _ in items]
    decoders = [decoder for _, decoder in items]
    size = len(items)

    def encode_tuple(value: Any) -> Any:
        if type(value) is not tuple or len(value) != size:
            raise TypeError(f"expected a tuple of {size}")
        return [encoder(element) for encoder, element in zip(encoders, value)]

    def decode_tuple(data: Any) -> Any:
        if type(data) is not list or len(data) != size:
            raise Invalid(f"expected a list of {size}")
        return tuple([decoder(element) for decoder, element in zip(decoders, data)])

    return encode_tuple, decode_tuple


def _dict_codec(keys: tuple[Encoder, Decoder], values: tuple[Encoder, Decoder]) -> tuple[Encoder, Decoder]:
    encode_key, decode_key = keys
    encode_value, decode_value = values

    def encode_dict(value: Any) -> Any:
        if type(value) is not dict:
            raise TypeError(f"expected dict, got {type(value).__name__}")
        # Pairs, not a JSON object: keys keep their type (JSON objects have string keys only).
        return [[encode_key(k), encode_value(v)] for k, v in value.items()]

    def decode_dict(data: Any) -> Any:
        if type(data) is not list:
            raise Invalid("expected a list of pairs for a dict")
        out = {}
        for pair in data:
            if type(pair) is not list or len(pair) != 2:
                raise Invalid("expected a [key, value] pair")
            out[decode_key(pair[0])] = decode_value(pair[1])
        return out

    return encode_dict, decode_dict


def _union_codec(args: tuple[Any, ...]) -> tuple[Encoder, Decoder]:
    others = [arg for arg in args if arg is not type(None)]
    optional = len(others) < len(args)
    if len(others) == 1 and optional:
        # ``X | None``: null or X's encoding (no X encodes as null).
        encode_x, decode_x = codec_for(others[0])

        def encode_optional(value: Any) -> Any:
            return None if value is None else encode_x(value)

        def decode_optional(data: Any) -> Any:
            return None if data is None else decode_x(data)

        return encode_optional, decode_optional
    # Anything else: [index of the alternative, its encoding], each alternative tried in order
    # when encoding (the first that accepts the value).
    alternatives = [codec_for(arg) for arg in args]

    def encode_union(value: Any) -> Any:
        for number, (encoder, _) in enumerate(alternatives):
            try:
                return [number, encoder(value)]
            except TypeError:
                continue
        raise TypeError(f"{type(value).__name__} is none of {args!r}")

    def decode_union(data: Any) -> Any:
        if type(data) is not list or len(data) != 2 or type(data[0]) is not int or not 0 <= data[0] < len(alternatives):
            raise Invalid("expected [alternative, value]")
        return alternatives[data[0]][1](data[1])

    return encode_union, decode_union


def _dataclass_codec(kind: type) -> tuple[Encoder, Decoder]:
    # Registered before its fields are built, so a class that (indirectly) holds itself works.
    built: list[tuple[Encoder, Decoder]] = []
    _codecs[kind] = (lambda value: built[0][0](value), lambda data: built[0][1](data))
    try:
        hints = typing.get_type_hints(kind)
    except Exception as exc:  # noqa: BLE001 - an annotation that does not resolve is unsupported
        del _codecs[kind]
        raise UnsupportedType(f"the field types of {kind.__qualname__} do not resolve: {exc}") from exc
    stored: list[str] = []
    derived: list[dataclasses.Field] = []
    for item in dataclasses.fields(kind):
        if item.name.startswith("_"):
            if item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING:
                del _codecs[kind]
                raise UnsupportedType(f"{kind.__qualname__}.{item.name}: a derived field needs a default")
            derived.append(item)
        else:
            stored.append(item.name)
    namespace: dict[str, Any] = {
        "_list": list, "_type": type, "_Invalid": Invalid, "_new": object.__new__, "_setattr": object.__setattr__, "_cls": kind,
        "_str": str, "_int": int, "_bool": bool, "_None": None, "_NIL": [],
    }
    checks: list[str] = []  # what the stored values must pass, inline
    encoded: list[str] = []  # each field's JSON value, from its local
    decoded: list[str] = []  # each field's value, from its JSON local
    try:
        for number, name in enumerate(stored):
            hint = hints[name]
            encoder, decoder = codec_for(hint)
            local = f"f{number}"
            scalar = _scalar_type(hint)
            optional = _optional_scalar(hint)
            if scalar is not None:
                checks.append(f"_type({local}) is _{scalar.__name__}")
                encoded.append(local)
                decoded.append(local)
            elif optional is not None:
                checks.append(f"({local} is _None or _type({local}) is _{optional.__name__})")
                encoded.append(local)
                decoded.append(local)
            else:
                namespace[f"_E{number}"] = encoder
                namespace[f"_D{number}"] = decoder
                encoded.append(f"_E{number}({local})")
                empty = _empty_of(hint)
                if empty is not None:
                    # Most sequences of most facts are empty: [] decodes to the empty
                    # container without a call (``[] == x`` holds for an empty list only).
                    namespace[f"_Z{number}"] = empty
                    decoded.append(f"(_Z{number} if {local} == _NIL else _D{number}({local}))")
                else:
                    decoded.append(f"_D{number}({local})")
    except UnsupportedType as exc:
        del _codecs[kind]
        raise UnsupportedType(f"{kind.__qualname__}.{name}: {exc}") from exc
    # The encoder and decoder are written out as Python for this class's fields, as
    # ``dataclasses`` writes ``__init__``: one function without a call per scalar field is
    # what makes reading an entry about as fast as unpickling it was. Their text comes from
    # the class definitions alone (field names are identifiers), never from cache contents.
    size = len(stored)
    unpack = f"    {', '.join(f'f{n}' for n in range(size))}{',' if size == 1 else ''} = data\n" if size else ""
    test = " and ".join(checks) or "True"
    encoder_source = (
        "def encode(value):\n"
        "    if _type(value) is not _cls:\n"
        f"        raise TypeError('expected {kind.__qualname__}, got ' + _type(value).__name__)\n"
        + "".join(f"    f{n} = value.{name}\n" for n, name in enumerate(stored))
        + f"    if not ({test}):\n"
        f"        raise TypeError('a field of {kind.__qualname__} does not have its declared type')\n"
        f"    return [{', '.join(encoded)}]\n"
    )
    values = [f"{name!r}: {expression}" for name, expression in zip(stored, decoded)]
    for number, item in enumerate(derived):
        if item.default_factory is not dataclasses.MISSING:
            namespace[f"_F{number}"] = item.default_factory
            values.append(f"{item.name!r}: _F{number}()")
        else:
            namespace[f"_V{number}"] = item.default
            values.append(f"{item.name!r}: _V{number}")
    # Instances are made as pickle makes them (a new object, its attribute dict set): the
    # frozen ``__init__`` sets each field through ``object.__setattr__`` at several times the
    # cost. A class with ``__post_init__`` or slots goes through ``__init__``.
    plain = not hasattr(kind, "__post_init__") and not hasattr(kind, "__slots__")
    if plain:
        make = f"    instance = _new(_cls)\n    _setattr(instance, '__dict__', {{{', '.join(values)}}})\n    return instance\n"
    else:
        keywords = [f"{name}={expression}" for name, expression in zip(stored, decoded)]
        make = f"    return _cls({', '.join(keywords)})\n"
    decoder_source = (
        "def decode(data):\n"
        f"    if _type(data) is not _list or len(data) != {size}:\n"
        f"        raise _Invalid('expected {size} fields of {kind.__qualname__}')\n"
        + unpack
        + f"    if not ({test}):\n"
        f"        raise _Invalid('a field of {kind.__qualname__} has the wrong type')\n"
        + make
    )
    exec(compile(encoder_source + decoder_source, f"<recompile-lint codec of {kind.__qualname__}>", "exec"), namespace)  # noqa: S102
    encode_dataclass, decode_dataclass = namespace["encode"], namespace["decode"]
    built.append((encode_dataclass, decode_dataclass))
    _codecs[kind] = built[0]
    return built[0]


def dataclasses_reachable(kind: Any) -> list[type]:
    """Every dataclass a value of ``kind`` can hold, ``kind`` first when it is one (what the
    codec must handle to store it)."""
    found: list[type] = []

    def visit(tp: Any) -> None:
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            if tp in found:
                return
            found.append(tp)
            hints = typing.get_type_hints(tp)
            for item in dataclasses.fields(tp):
                if not item.name.startswith("_"):
                    visit(hints[item.name])
            return
        for arg in typing.get_args(tp):
            if arg is not Ellipsis:
                visit(arg)

    visit(kind)
    return found


# ---- the user's key and directory, entries -----------------------------------------------------

MAGIC = b"RLC1\n"
_MAC_SIZE = 32
# Larger cache files are never read (a planted multi-gigabyte file must not exhaust memory).
MAX_ENTRY_BYTES = 256 * 1024 * 1024
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
# Descriptor-relative file operations without following links need these (POSIX): elsewhere
# (Windows) there is no cache.
SUPPORTED = bool(_NOFOLLOW and _DIRECTORY) and os.open in os.supports_dir_fd and os.name == "posix"
KEY_NAME = "key"
_keys: dict[str, bytes] = {}


def user_cache_directory() -> str | None:
    """``$XDG_CACHE_HOME/recompile-lint``, else ``~/.cache/recompile-lint`` (None when there is
    no home to put it in). Keys and caches of projects whose own cache cannot be used live here."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # the XDG spec: a relative value is ignored
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "recompile-lint")


def _own_directory(fd: int) -> bool:
    info = os.fstat(fd)
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()


def _open_directory(name: str, dir_fd: int | None = None) -> int:
    """A descriptor of the directory ``name`` (relative to ``dir_fd``), never through a link:
    a link raises OSError (ELOOP or ENOTDIR)."""
    return os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=dir_fd)


def _make_directory(name: str, dir_fd: int, mode: int = 0o777) -> tuple[int, bool]:
    """(descriptor of the directory ``name`` in ``dir_fd``, whether it was made now); the
    directory must be this user's. Raises OSError."""
    try:
        os.mkdir(name, mode, dir_fd=dir_fd)
        made = True
    except FileExistsError:
        made = False
    fd = _open_directory(name, dir_fd)
    if not _own_directory(fd):
        os.close(fd)
        raise PermissionError(f"{name} is not this user's directory")
    return fd, made


def _open_parent(path: str, create: bool) -> tuple[int, str]:
    """(descriptor of ``path``'s parent directory, ``path``'s last name). The parent is given
    by the user (a project root, a ``--cache-dir``): it may be reached through links."""
    parent, name = os.path.split(os.path.abspath(path))
    if not name or name in (".", ".."):
        raise OSError(f"not a directory name: {path}")
    if create:
        os.makedirs(parent, exist_ok=True)
    return os.open(parent, os.O_RDONLY | _DIRECTORY | _CLOEXEC), name


def read_file(name: str, dir_fd: int, limit: int = MAX_ENTRY_BYTES) -> tuple[bytes, os.stat_result] | None:
    """(content, status) of the regular file ``name`` in ``dir_fd``, never through a link and
    never blocking on a pipe or device; None when there is no such file (or it is too large)."""
    try:
        fd = os.open(name, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        chunks = []
        while True:
            chunk = os.read(fd, max(info.st_size + 1, 65536))
            if not chunk:
                break
            chunks.append(chunk)
            if sum(len(c) for c in chunks) > limit:
                return None
        return b"".join(chunks), info
    except OSError:
        return None
    finally:
        os.close(fd)


def write_file(name: str, dir_fd: int, data: bytes, mode: int = 0o666) -> None:
    """Write ``name`` in ``dir_fd`` through a new file renamed over it: a concurrent run never
    reads half a file, and a link named ``name`` is replaced, never followed. Raises OSError."""
    tmp = f".tmp-{os.urandom(8).hex()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, mode, dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def _user_directory() -> tuple[int, str] | None:
    """(descriptor, path) of the user's cache directory, made 0700 when missing; None when it
    cannot be used (it must be this user's, not a link, and closed to others)."""
    directory = user_cache_directory()
    if directory is None or not SUPPORTED:
        return None
    try:
        parent, name = _open_parent(directory, create=True)
        try:
            fd, made = _make_directory(name, parent, 0o700)
        finally:
            os.close(parent)
        if stat.S_IMODE(os.fstat(fd).st_mode) & 0o077:
            # Others could have read or replaced its key: close it and make a new key.
            os.fchmod(fd, 0o700)
            try:
                os.unlink(KEY_NAME, dir_fd=fd)
            except OSError:
                pass
        return fd, directory
    except OSError:
        return None


def user_key() -> bytes | None:
    """This user's cache key (made on first use: 32 random bytes, mode 0600, in the user's
    cache directory); None when there is none to be had, and then nothing is cached."""
    directory = user_cache_directory()
    if directory is None:
        return None
    known = _keys.get(directory)
    if known is not None:
        return known
    opened = _user_directory()
    if opened is None:
        return None
    fd, _ = opened
    try:
        key = _read_key(fd)
        if key is None:
            try:
                # One others could read, of another size, or a link: never used, replaced.
                os.unlink(KEY_NAME, dir_fd=fd)
            except FileNotFoundError:
                pass
            tmp = f".key-{os.urandom(8).hex()}"
            handle = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600, dir_fd=fd)
            try:
                os.write(handle, os.urandom(32))
            finally:
                os.close(handle)
            try:
                # A link, not a rename: when another process made its key meanwhile, that one
                # stays and both use it.
                os.link(tmp, KEY_NAME, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
            except FileExistsError:
                pass
            finally:
                os.unlink(tmp, dir_fd=fd)
            key = _read_key(fd)
    except OSError:
        key = None
    finally:
        os.close(fd)
    if key is not None:
        _keys[directory] = key
    return key


def _read_key(fd: int) -> bytes | None:
    found = read_file(KEY_NAME, fd, limit=64)
    if found is None:
        return None
    data, info = found
    if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077 or len(data) != 32:
        return None
    return data


def seal(key: bytes, kind: str, name: str, payload: bytes) -> bytes:
    """The bytes stored for ``payload``: a header and the HMAC binding it to this user's key,
    its kind and its name (an entry copied under another name is not valid there)."""
    mac = hmac.digest(key, b"".join((kind.encode(), b"\0", name.encode("utf-8", "surrogatepass"), b"\0", payload)), "sha256")
    return MAGIC + mac + payload


def unseal(key: bytes, kind: str, name: str, data: bytes) -> bytes | None:
    """The payload of ``data`` when ``seal`` made it with this key, kind and name, else None."""
    start = len(MAGIC) + _MAC_SIZE
    if len(data) < start or not data.startswith(MAGIC):
        return None
    payload = data[start:]
    mac = hmac.digest(key, b"".join((kind.encode(), b"\0", name.encode("utf-8", "surrogatepass"), b"\0", payload)), "sha256")
    return payload if hmac.compare_digest(mac, data[len(MAGIC) : start]) else None


def read_sealed(key: bytes, dir_fd: int, kind: str, name: str, value_type: Any) -> Any:
    """The value of ``value_type`` in the entry ``name`` of ``dir_fd``, when this user's cache
    wrote it there as ``kind``; None for anything else."""
    found = read_file(name, dir_fd)
    payload = unseal(key, kind, name, found[0]) if found is not None else None
    return _loads(payload, value_type) if payload is not None else None


def _dumps(value: Any, kind: Any) -> bytes:
    # ASCII JSON: a path that is not valid UTF-8 survives as a \\udcxx escape.
    return json.dumps(encode(value, kind), separators=(",", ":"), ensure_ascii=True).encode("ascii")


def _loads(payload: bytes, kind: Any) -> Any:
    """The value of ``kind`` in ``payload``, or None when it does not decode."""
    try:
        return decode(json.loads(payload), kind)
    except (ValueError, RecursionError):  # Invalid, JSON and UTF-8 errors are ValueErrors
        return None


def _owner_mark(key: bytes) -> str:
    return hmac.digest(key, b"recompile-lint cache directory", "sha256").hex()


def claim_directory(path: str, key: bytes, create_parents: bool, create: bool = True) -> tuple[int, bool] | None:
    """(descriptor, made now) of the cache directory ``path``, or None when it cannot be ours.

    A directory is this user's cache when its ``CACHEDIR.TAG`` carries this user's mark (a
    repository cannot forge it), or when it is this user's and empty (made by hand, or left
    by a run that stopped before marking it): then it is marked now. A link, another user's
    directory, or a directory with other things in it and no mark is not used, and nothing in
    it is changed."""
    if not SUPPORTED:
        return None
    try:
        parent, name = _open_parent(path, create_parents)
    except OSError:
        return None
    try:
        if create:
            fd, made = _make_directory(name, parent)
        else:
            fd, made = _open_directory(name, parent), False
            if not _own_directory(fd):
                os.close(fd)
                return None
    except OSError:
        return None
    finally:
        os.close(parent)
    try:
        found = read_file("CACHEDIR.TAG", fd, limit=4096)
        mark = _OWNER_PREFIX + _owner_mark(key)
        if found is not None and mark in found[0].decode("ascii", "replace").splitlines():
            return fd, made
        if found is not None or os.listdir(fd) or not create:
            os.close(fd)
            return None
        write_file(".gitignore", fd, GITIGNORE_TEXT.encode())
        write_file("CACHEDIR.TAG", fd, f"{CACHEDIR_TAG}{mark}\n".encode())
        return fd, True
    except OSError:
        os.close(fd)
        return None


def remove_own(name: str, dir_fd: int, key: bytes, kind: str) -> None:
    """Delete ``name`` in ``dir_fd`` if it is a file this user's cache wrote as ``kind`` (its
    HMAC says so), or a directory whose every file is such a file (emptied, then removed).
    Anything else, and everything inside it, stays."""
    try:
        fd = _open_directory(name, dir_fd)
    except OSError:
        found = read_file(name, dir_fd)
        if found is not None and unseal(key, kind, name, found[0]) is not None:
            try:
                os.unlink(name, dir_fd=dir_fd)
            except OSError:
                pass
        return
    try:
        if not _own_directory(fd):
            return
        for entry in os.listdir(fd):
            remove_own(entry, fd, key, "calls" if entry == "calls" or kind == "calls" else kind)
    finally:
        os.close(fd)
    try:
        os.rmdir(name, dir_fd=dir_fd)  # fails, as it should, when something was left
    except OSError:
        pass


# ---- facts and call sites ----------------------------------------------------------------------


def _facts_type() -> type:
    from recompile_lint.analysis.facts import ModuleFacts

    return ModuleFacts


def _call_sites_type() -> Any:
    from recompile_lint.analysis.callsites import CallSite

    return tuple[CallSite, ...]


def dump_entry(facts: ModuleFacts) -> bytes:
    """The JSON stored for ``facts`` (before sealing; lookup tables are left out)."""
    return _dumps(facts, _facts_type())


def load_entry(payload: bytes) -> ModuleFacts | None:
    """The facts in an (unsealed) entry payload, or None when it is not well-formed."""
    return _loads(payload, _facts_type())


def dump_call_sites(sites: tuple) -> bytes:
    return _dumps(sites, _call_sites_type())


def load_call_sites(payload: bytes) -> tuple | None:
    """The call sites in an (unsealed) entry payload, or None when it is not well-formed."""
    return _loads(payload, _call_sites_type())


class _Opened:
    """A cache directory in use: its descriptors and this user's key."""

    def __init__(self, directory: Path, fd: int, key: bytes, facts_fd: int, facts_text: str):
        self.directory = directory
        self.fd = fd
        self.key = key
        self.facts_fd = facts_fd
        self.facts_text = facts_text
        self.calls_fd: int | None = None


class FactsCache:
    """Per-file facts on disk, with the ``get``/``put`` interface ``FactsStore`` calls.

    ``directory`` is the cache directory itself (``.../.recompile-lint-cache``); when it is
    None it is chosen on first use as ``.recompile-lint-cache`` in the project root above
    the first file asked for. ``chosen``: the user named the directory (``--cache-dir``, the
    configuration): when it cannot be used nothing is cached; a default location that cannot
    be used (a cache directory committed to the repository, a read-only checkout) gives way
    to one in the user's cache directory.
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None, *, chosen: bool | None = None, max_file_bytes: int | None = None):
        self._directory: Path | None = Path(directory) if directory is not None else None
        self._max_file_bytes = max_file_bytes
        self._chosen = chosen if chosen is not None else directory is not None
        self._opened: _Opened | None = None
        self._disabled = False
        self._writable = True
        self._modules: dict[str, tuple[str, bool]] = {}
        self.hits = 0
        self.misses = 0

    @classmethod
    def for_config(cls, config: Any, root: str | os.PathLike[str] | None = None) -> "FactsCache | None":
        """The cache a config asks for: ``cache_dir``, else beside the config's pyproject,
        else in ``root`` (the engine's project root), else found from the first file linted.
        None when caching is off."""
        if not getattr(config, "cache", True):
            return None
        limit = getattr(config, "max_file_bytes", None)
        if getattr(config, "cache_dir", None):
            return cls(config.cache_dir, chosen=True, max_file_bytes=limit)
        base = getattr(config, "source", None) or root
        return cls(Path(base) / CACHE_DIR_NAME if base else None, chosen=False, max_file_bytes=limit)

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        """Close the directories' descriptors (the cache is not used afterwards)."""
        opened, self._opened = self._opened, None
        if opened is not None:
            for fd in (opened.calls_fd, opened.facts_fd, opened.fd):
                if fd is not None:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
        self._disabled = True

    # ---- the FactsStore interface ---------------------------------------------------------

    def get(self, key: str, path: str) -> ModuleFacts | None:
        """The cached facts of ``path`` whose content hashes to ``key``, or None."""
        opened = self._open(path)
        if opened is None:
            return None
        name = self._entry_name(key, path)
        if resident is not None:
            kept = resident.get(f"{opened.facts_text}/{name}")
            if kept is not None and getattr(kept, "path", None) == path:
                self.hits += 1
                return kept
        facts = read_sealed(opened.key, opened.facts_fd, "facts", name, _facts_type())
        if facts is None or facts.path != path:
            self.misses += 1
            return None
        self.hits += 1
        return facts

    def put(self, key: str, path: str, facts: ModuleFacts) -> None:
        """Store ``facts``; failures turn writing off for the rest of the run, silently."""
        opened = self._open(path)
        if opened is not None:
            self._store(opened, opened.facts_fd, "facts", self._entry_name(key, path), facts, _facts_type())

    def get_call_sites(self, key: str, path: str) -> tuple | None:
        """Call sites collected in ``path`` (content ``key``) for a set of callee names."""
        opened = self._open(path)
        calls = self._calls(opened) if opened is not None else None
        if calls is None or opened is None:
            return None
        name = self._entry_name(key, path)
        if resident is not None:
            kept = resident.get(f"{opened.facts_text}/calls/{name}")
            if isinstance(kept, tuple):
                return kept
        sites = read_sealed(opened.key, calls, "calls", name, _call_sites_type())
        if sites is None or any(site.path != path for site in sites):
            return None
        return sites

    def put_call_sites(self, key: str, path: str, sites: tuple) -> None:
        opened = self._open(path)
        calls = self._calls(opened) if opened is not None else None
        if calls is not None and opened is not None:
            self._store(opened, calls, "calls", self._entry_name(key, path), sites, _call_sites_type())

    def _store(self, opened: _Opened, dir_fd: int, kind: str, name: str, value: Any, value_type: Any) -> None:
        if not self._writable:
            return
        try:
            write_file(name, dir_fd, seal(opened.key, kind, name, _dumps(value, value_type)))
        except (OSError, TypeError, ValueError, RecursionError):
            self._writable = False

    def _calls(self, opened: _Opened) -> int | None:
        if opened.calls_fd is None:
            try:
                opened.calls_fd, _ = _make_directory("calls", opened.facts_fd)
            except OSError:
                return None
        return opened.calls_fd

    def run_cache(self, first_path: str) -> "RunCache | None":
        """The whole-run results cache kept in the same directory (None when it is unusable)."""
        opened = self._open(first_path)
        if opened is None:
            return None
        return RunCache(opened.directory, opened.fd, opened.key, self._max_file_bytes)

    # ---- layout ---------------------------------------------------------------------------

    @property
    def directory(self) -> Path | None:
        """The cache directory in use (None until a file's root decided it, or when disabled)."""
        if self._disabled:
            return None
        return self._opened.directory if self._opened is not None else self._directory

    def _entry_name(self, key: str, path: str) -> str:
        """The name of the entry for ``path`` with content ``key``."""
        module, is_package = self._module_of(path)
        # The same bytes at another path, or under another package layout, are other facts.
        digest = hashlib.blake2b(digest_size=16)
        digest.update(f"{key}\0".encode("utf-8", "surrogatepass"))
        digest.update(_path_bytes(os.path.abspath(path)))
        digest.update(f"\0{module}\0{is_package}".encode("utf-8", "surrogatepass"))
        return digest.hexdigest()

    def _module_of(self, path: str) -> tuple[str, bool]:
        found = self._modules.get(path)
        if found is None:
            from recompile_lint.analysis.parsing import module_name_for

            module, is_package, _ = module_name_for(path)
            found = (module, is_package)
            self._modules[path] = found
        return found

    def _open(self, first_path: str) -> _Opened | None:
        if self._opened is not None or self._disabled:
            return self._opened
        key = user_key()
        root = None
        if self._directory is None:
            from recompile_lint.discovery import find_project_root

            root = find_project_root([first_path])
            self._directory = root / CACHE_DIR_NAME
        claimed = claim_directory(str(self._directory), key, create_parents=self._chosen) if key is not None else None
        if claimed is None and key is not None and not self._chosen:
            # The project's own cache cannot be used (committed to the repository, another
            # user's, a link, a read-only checkout): keep this project's in the user's cache.
            fallback = _fallback_directory(root if root is not None else self._directory.parent)
            if fallback is not None:
                claimed = claim_directory(fallback, key, create_parents=True)
                if claimed is not None:
                    self._directory = Path(fallback)
        if claimed is None or key is None:
            self._disabled = True
            return None
        fd, _ = claimed
        name = f"facts-{_schema_fingerprint()}"
        try:
            facts_fd, made = _make_directory(name, fd)
        except OSError:
            os.close(fd)
            self._disabled = True
            return None
        if made:
            # Entries of another version or facts schema can never be read again.
            for stale in _listdir(fd):
                if stale.startswith("facts-") and stale != name:
                    remove_own(stale, fd, key, "facts")
        self._opened = _Opened(self._directory, fd, key, facts_fd, os.path.join(os.path.abspath(self._directory), name))
        opened_directories.add(self._opened.facts_text)
        return self._opened


def _fallback_directory(root: Path) -> str | None:
    """Where a project whose own cache directory cannot be used keeps its cache: under the
    user's cache directory, by a digest of the project root's path."""
    base = user_cache_directory()
    if base is None:
        return None
    name = hashlib.blake2b(_path_bytes(os.path.abspath(root)), digest_size=12).hexdigest()
    return os.path.join(base, "projects", name)


def _listdir(fd: int) -> list[str]:
    try:
        return os.listdir(fd)
    except OSError:
        return []


def resident_entries(entries: str, known: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """Every valid entry of a facts directory (``FactsCache`` opened it, see
    ``opened_directories``) not in ``known``, read: (entry path, facts or call sites). The
    directory must be this user's cache (its mark), reached without links."""
    key = user_key()
    if key is None or not SUPPORTED:
        return
    cache_dir, name = os.path.split(entries)
    if not name.startswith("facts-"):
        return
    claimed = claim_directory(cache_dir, key, create_parents=False, create=False)
    if claimed is None:
        return
    fd, _ = claimed
    try:
        try:
            facts_fd = _open_directory(name, fd)
        except OSError:
            return
        try:
            for entry in sorted(_listdir(facts_fd)):
                if entry.startswith("."):
                    continue
                if entry == "calls":
                    try:
                        calls_fd = _open_directory(entry, facts_fd)
                    except OSError:
                        continue
                    try:
                        for call in sorted(_listdir(calls_fd)):
                            path = f"{entries}/calls/{call}"
                            if not call.startswith(".") and path not in known:
                                sites = read_sealed(key, calls_fd, "calls", call, _call_sites_type())
                                if sites is not None:
                                    yield path, sites
                    finally:
                        os.close(calls_fd)
                    continue
                path = f"{entries}/{entry}"
                if path not in known:
                    facts = read_sealed(key, facts_fd, "facts", entry, _facts_type())
                    if facts is not None:
                        yield path, facts
        finally:
            os.close(facts_fd)
    finally:
        os.close(fd)


# ---- whole-run results ----------------------------------------------------------------------

RUNS_KEPT = 32  # results of this many distinct runs (argument lists, configs) are kept
FILE_TABLE = "file-digests.json"
# Git's racy-clean rule: a file modified this close to (or after) the moment the digest table
# was written may have changed again within the same timestamp tick without its status
# showing it; its digest is never trusted, the file is hashed again.
RACY_NS = 2_000_000_000


# The last code fingerprint, by the status of the files it read: a process that opens many
# run caches (flake8, one per project) hashes the linter's code once.
_fingerprinted: tuple[tuple, str] | None = None


def _code_fingerprint() -> str:
    """A digest of every module of the linter (rules included): results of other code never count."""
    global _fingerprinted
    here = Path(__file__).resolve().parent
    paths = [path for path in sorted(here.rglob("*.py")) if "verify" not in path.relative_to(here).parts] + [measured.TABLE]
    status = []
    for path in paths:
        try:
            status.append(tuple(_stamp(path.stat())))
        except OSError:
            status.append(None)
    schema = _schema_fingerprint()
    stamps = (schema, tuple(paths), tuple(status))
    if _fingerprinted is not None and _fingerprinted[0] == stamps:
        return _fingerprinted[1]
    digest = hashlib.blake2b(schema.encode(), digest_size=16)
    for path in paths[:-1]:
        try:
            digest.update(str(path.relative_to(here)).encode())
            digest.update(path.read_bytes())
        except OSError:
            digest.update(b"?")
    try:
        digest.update(measured.TABLE.read_bytes())  # the lab's measured table decides costs too
    except OSError:
        digest.update(b"?")
    _fingerprinted = (stamps, digest.hexdigest())
    return _fingerprinted[1]


def _stamp(info: os.stat_result) -> list[int]:
    """What says a file is unchanged: size, modification and status-change times, inode."""
    return [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]


class RunCache:
    """The result of a whole run, keyed by everything it depends on.

    The key covers the linter's own code, the settings, the files named and the content digest
    of every file of the project, so a second run over an unchanged tree returns the first
    run's result without reading any facts. Content digests are kept in a table by file status
    (size, modification time, status-change time, inode), as ``git status`` keeps its index: a
    file whose status changed is hashed again. Restoring the modification time after an edit
    does not hide it: the status-change time cannot be set back. And as git does against
    racy-clean files, content digests decide whenever the status cannot: a file modified
    within ``RACY_NS`` of the moment the table was written (the table file's own modification
    time, from the same file system clock as the file's), or one on another file system than
    the table (another clock), is always hashed again. Like the facts cache it is an
    optimisation only: any failure means "not cached".
    """

    def __init__(self, directory: Path, fd: int, key: bytes, max_file_bytes: int | None = None):
        self.directory = directory
        self._fd = fd
        self._key = key
        # Files larger than this are never linted (only their size is reported): they are
        # named by their status, not read and hashed.
        self._max_file_bytes = max_file_bytes
        self.runs = directory / f"runs-{_code_fingerprint()}"
        self._table: dict[str, list] | None = None
        self._table_time = 0  # modification time of the table file as read
        self._table_device = -1
        self._table_changed = False
        self.digests: dict[str, str] = {}  # path -> content digest, of the files ``key`` read

    # ---- file digests ---------------------------------------------------------------------

    def _load_table(self) -> dict[str, list]:
        if self._table is None:
            self._table = {}
            found = read_file(FILE_TABLE, self._fd)
            payload = unseal(self._key, "table", FILE_TABLE, found[0]) if found is not None else None
            table = _loads(payload, dict[str, tuple[int, int, int, int, str]]) if payload is not None else None
            if table is not None and found is not None:
                self._table = {path: list(entry) for path, entry in table.items()}
                self._table_time = found[1].st_mtime_ns
                self._table_device = found[1].st_dev
        return self._table

    def digest(self, path: str) -> str | None:
        """The content digest of ``path`` (None when it cannot be read)."""
        table = self._load_table()
        try:
            info = os.stat(path)
        except OSError:
            return None
        stamp = _stamp(info)
        entry = table.get(path)
        if (
            entry is not None
            and entry[:4] == stamp
            and info.st_dev == self._table_device
            and info.st_mtime_ns < self._table_time - RACY_NS
        ):
            return entry[4]
        if self._max_file_bytes is not None and info.st_size > self._max_file_bytes:
            return "large-" + "-".join(map(str, stamp))
        from recompile_lint.source import SourceError, read_bytes

        try:
            data = read_bytes(path)
        except SourceError:
            return None
        value = content_digest(data)
        table[path] = [*stamp, value]
        self._table_changed = True
        return value

    def save_table(self, keep: Iterable[str]) -> None:
        """Write the digest table back (only the project's files), if anything changed."""
        if not self._table_changed or self._table is None:
            return
        keep = set(keep)
        table = {path: tuple(entry) for path, entry in self._table.items() if path in keep}
        try:
            data = _dumps(table, dict[str, tuple[int, int, int, int, str]])
            write_file(FILE_TABLE, self._fd, seal(self._key, "table", FILE_TABLE, data))
        except (OSError, TypeError, ValueError):
            pass

    def buffer_digests(self, files: Sequence[str], buffers: Mapping[str, bytes]) -> None:
        """``digests`` of a run over ``files`` in which ``buffers`` (path -> unsaved text)
        stand in for some of them; files that cannot be read get none."""
        for path in files:
            value = content_digest(buffers[path]) if path in buffers else self.digest(path)
            if value is not None:
                self.digests[path] = value

    # ---- results --------------------------------------------------------------------------

    def key(self, settings: str, given: Sequence[tuple[str, str]], files: Sequence[str]) -> str | None:
        """The key of a run, or None when a file cannot be read (such runs are not cached)."""
        digest = hashlib.blake2b(settings.encode("utf-8", "surrogatepass"), digest_size=16)
        for absolute, display in given:
            digest.update(f"given\0{absolute}\0{display}\0".encode("utf-8", "surrogatepass"))
        for path in files:
            value = self.digest(path)
            if value is None:
                return None
            self.digests[path] = value
            digest.update(f"{path}\0{value}\0".encode("utf-8", "surrogatepass"))
        return digest.hexdigest()

    def get(self, key: str) -> Any:
        from recompile_lint.models import LintResult

        try:
            runs = _open_directory(self.runs.name, self._fd)
        except OSError:
            return None
        try:
            found = read_file(key, runs)
        finally:
            os.close(runs)
        payload = unseal(self._key, "run", key, found[0]) if found is not None else None
        return _loads(payload, LintResult) if payload is not None else None

    def put(self, key: str, result: Any) -> None:
        from recompile_lint.models import LintResult

        try:
            runs, made = _make_directory(self.runs.name, self._fd)
        except OSError:
            return
        try:
            if made:
                for stale in _listdir(self._fd):
                    if stale.startswith("runs-") and stale != self.runs.name:
                        remove_own(stale, self._fd, self._key, "run")
            write_file(key, runs, seal(self._key, "run", key, _dumps(result, LintResult)))
            ages = []
            for name in _listdir(runs):
                try:
                    ages.append((os.stat(name, dir_fd=runs, follow_symlinks=False).st_mtime_ns, name))
                except OSError:
                    continue
            for _, old in sorted(ages)[:-RUNS_KEPT]:
                remove_own(old, runs, self._key, "run")
        except (OSError, TypeError, ValueError, RecursionError):
            pass
        finally:
            os.close(runs)
