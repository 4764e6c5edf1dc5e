"""The one YAML reader: every YAML file or text kvmtune parses comes here
(kvmtune.inputs reads the bytes).

A failure is the project's one error (InputError: one line with the
problem, the source, the key and a fix), never a traceback, a MemoryError
or a RecursionError. load_yaml / parse_yaml: safe YAML, a duplicate key is
an error (a second ``tuners:`` would silently replace the first), keys
must be strings (``yes:`` and ``1:`` are not), nesting and alias
expansion are bounded.
"""

from typing import Any

from kvmtune.errors import InputError
from kvmtune import inputs

MAX_NODES = 1_000_000       # YAML nodes after alias expansion


def _yaml_loader(source: object, max_depth: int) -> type[Any]:
    import yaml

    class Loader(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            self.depth += 1
            if self.depth > max_depth:
                mark = self.peek_event().start_mark
                raise InputError(f'nested deeper than {max_depth} levels',
                                 source=source,
                                 key=f'line {mark.line + 1}',
                                 fix='flatten the document')
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

        def construct_mapping(self, node: Any,
                              deep: bool = False) -> Any:
            seen: dict[str, str] = {}
            for key_node, _ in node.value:
                line = f'line {key_node.start_mark.line + 1}'
                if key_node.tag == 'tag:yaml.org,2002:merge':
                    continue
                if (not isinstance(key_node, yaml.ScalarNode)
                        or key_node.tag != 'tag:yaml.org,2002:str'):
                    shown = getattr(key_node, 'value', '?')
                    if not isinstance(shown, str):
                        raise InputError(
                            'a key is a ' + type(key_node).__name__[:-4]
                            .lower() + ', not a string', source=source,
                            key=line, fix='use a plain string as the key')
                    raise InputError(
                        f'key {shown!r} is not a string (YAML reads it as '
                        f'{key_node.tag.rsplit(":", 1)[-1]})', source=source,
                        key=line, fix=f'quote it: "{shown}"')
                if key_node.value in seen:
                    raise InputError(
                        f'duplicate key {key_node.value!r} (first at '
                        f'{seen[key_node.value]}); YAML would keep only the '
                        'last one', source=source, key=line,
                        fix='merge the two into one')
                seen[key_node.value] = line
            return super().construct_mapping(node, deep=deep)

    return Loader


def _expanded_size(root: Any, limit: int, source: object) -> int:
    """Nodes after alias expansion (a billion laughs stays bounded)."""
    import yaml

    sizes: dict[int, int] = {}
    stack = [(root, False)]
    on_path: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            children = _children(node, yaml)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            if sizes[key] > limit:
                raise InputError(f'expands to more than {limit} nodes '
                                 '(aliases)', source=source,
                                 fix='write the document without '
                                 'repeated aliases')
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise InputError('an alias refers to itself (a recursive '
                             'document)', source=source,
                             key=f'line {node.start_mark.line + 1}',
                             fix='remove the recursive alias')
        on_path.add(key)
        stack.append((node, True))
        for child in _children(node, yaml):
            if id(child) in on_path:
                raise InputError('an alias refers to itself (a recursive '
                                 'document)', source=source,
                                 key=f'line {child.start_mark.line + 1}',
                                 fix='remove the recursive alias')
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)]


def _children(node: Any, yaml: Any) -> list[Any]:
    if isinstance(node, yaml.SequenceNode):
        children: list[Any] = node.value
        return children
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def parse_yaml(text: str, source: object, *, max_depth: int = inputs.MAX_DEPTH,
               max_nodes: int = MAX_NODES) -> Any:
    """The one YAML document in ``text`` (None when empty)."""
    import yaml

    loader = _yaml_loader(source, max_depth)(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node, max_nodes, source)
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f'line {mark.line + 1}, column {mark.column + 1}' \
            if mark else None
        problem = exc.problem or exc.context or 'not valid YAML'
        raise InputError(f'malformed YAML: {problem}', source=source,
                         key=where, fix='correct the YAML syntax') from None
    except yaml.YAMLError as exc:
        raise InputError(f'malformed YAML: {exc}', source=source,
                         fix='correct the YAML syntax') from None
    except RecursionError:
        raise InputError('nested too deeply', source=source,
                         fix='flatten the document') from None
    finally:
        loader.dispose()


def load_yaml(path: str, *, max_bytes: int = inputs.MAX_BYTES,
              max_depth: int = inputs.MAX_DEPTH, source: object = None) -> Any:
    """parse_yaml() of the regular file ``path``."""
    source = source or path
    text = inputs.read_text(path, max_bytes=max_bytes, source=source)
    return parse_yaml(text, source, max_depth=max_depth)
