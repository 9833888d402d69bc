"""The lifecycle registry: every descriptor the store modules declare, validated as a whole.

A store module declares its table's descriptor as a module-level `DESCRIPTOR` (or `DESCRIPTORS`,
a tuple, when it owns several tables); the registry imports every module of
`timeline_pipeline.store` and collects them, so a new table is registered by its own module and
nothing here changes (docs/lifecycle.md). The owner of a descriptor must be the short name
of the module that declared it.
"""

from __future__ import annotations

import importlib
import math
import pkgutil
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from types import ModuleType
from typing import Final

from timeline_pipeline.domain.content_lineage import ContentCopy
from timeline_pipeline.domain.lifecycle import (
    LifecycleDescriptor,
    RegistryError,
    validate_descriptor,
)
from timeline_pipeline.lifecycle.errors import LifecycleError, UnknownDescriptorKey
from timeline_pipeline.settings import LarkTimelineSettings

STORE_PACKAGE = "timeline_pipeline.store"


class RegistryInvalid(LifecycleError):
    """The registry did not pass its check; `errors` names each field and reason."""

    code = "registry_invalid"

    def __init__(self, errors: list[RegistryError]) -> None:
        self.errors = errors
        first = str(errors[0]) if errors else "no errors"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        super().__init__(f"lifecycle registry invalid: {first}{more}")


class UnknownDescriptor(UnknownDescriptorKey):
    """No descriptor has that key."""


def _declared_in(module: ModuleType) -> list[LifecycleDescriptor]:
    found: list[LifecycleDescriptor] = []
    single = getattr(module, "DESCRIPTOR", None)
    if isinstance(single, LifecycleDescriptor):
        found.append(single)
    for item in getattr(module, "DESCRIPTORS", ()) or ():
        if isinstance(item, LifecycleDescriptor):
            found.append(item)
    return found


def store_modules(package: str = STORE_PACKAGE) -> Iterator[ModuleType]:
    root = importlib.import_module(package)
    for info in sorted(pkgutil.iter_modules(root.__path__), key=lambda m: m.name):
        if not info.ispkg:
            yield importlib.import_module(f"{package}.{info.name}")


def declarations(
    modules: Iterable[ModuleType] | None = None,
) -> list[tuple[str, LifecycleDescriptor]]:
    """(declaring module's short name, descriptor) for every declaration."""
    chosen = store_modules() if modules is None else modules
    return [(m.__name__.rsplit(".", 1)[-1], d) for m in chosen for d in _declared_in(m)]


def content_copies(modules: Iterable[ModuleType] | None = None) -> list[ContentCopy]:
    """Every table's declared copy of message text (`CONTENT`, or a tuple `CONTENTS`, beside
    the module's lifecycle descriptor; docs/lifecycle.md "What a recall and a hold do to each
    copy"), in the order a recall applies them: by stage, then key."""
    chosen = store_modules() if modules is None else modules
    found: list[ContentCopy] = []
    for module in chosen:
        single = getattr(module, "CONTENT", None)
        if isinstance(single, ContentCopy):
            found.append(single)
        found.extend(c for c in getattr(module, "CONTENTS", ()) or () if isinstance(c, ContentCopy))
    return sorted(found, key=lambda c: (c.stage, c.key))


def check_declarations(found: list[tuple[str, LifecycleDescriptor]]) -> list[RegistryError]:
    """Each descriptor on its own, then across them: unique keys, links to known descriptors."""
    errors: list[RegistryError] = []
    seen: dict[str, str] = {}
    by_key = {d.key: d for _, d in found}
    for module, d in found:
        errors.extend(validate_descriptor(d, module))
        if d.key in seen:
            errors.append(RegistryError(d.key, "key", f"also declared by {seen[d.key]!r}"))
        seen.setdefault(d.key, module)
    for _, d in found:
        for i, child in enumerate(d.children):
            target = by_key.get(child.descriptor_key)
            if target is None:
                errors.append(
                    RegistryError(d.key, f"children[{i}]", f"unknown {child.descriptor_key!r}")
                )
            elif not any(ix.columns[:1] == (child.column,) for ix in target.required_indexes):
                errors.append(
                    RegistryError(
                        target.key,
                        "required_indexes",
                        f"the NOT EXISTS probe of {d.key} needs an index leading with "
                        f"{child.column!r}",
                    )
                )
        for i, parent in enumerate(d.parents):
            if parent.descriptor_key not in by_key:
                errors.append(
                    RegistryError(d.key, f"parents[{i}]", f"unknown {parent.descriptor_key!r}")
                )
    return errors


@dataclass(frozen=True)
class Registry:
    descriptors: Mapping[str, LifecycleDescriptor]

    def get(self, key: str) -> LifecycleDescriptor:
        try:
            return self.descriptors[key]
        except KeyError:
            known = ", ".join(sorted(self.descriptors))
            raise UnknownDescriptor(f"--descriptor: unknown key {key!r} (known: {known})") from None

    def select(self, key: str | None) -> list[LifecycleDescriptor]:
        """One descriptor, or all of them in purge order (leaves before their parents)."""
        if key is not None:
            return [self.get(key)]
        return purge_order(list(self.descriptors.values()))

    def chain_keys(self, d: LifecycleDescriptor) -> tuple[str, ...]:
        """The descriptors a hold on `d` reaches, `d` included: its whole chain."""
        if d.chain is None:
            return (d.key,)
        return tuple(sorted(k for k, o in self.descriptors.items() if o.chain == d.chain))


def purge_order(descriptors: list[LifecycleDescriptor]) -> list[LifecycleDescriptor]:
    """Children before parents (a topological order), otherwise by key."""
    by_key = {d.key: d for d in descriptors}
    ordered: list[LifecycleDescriptor] = []
    done: set[str] = set()

    def visit(d: LifecycleDescriptor, stack: frozenset[str]) -> None:
        if d.key in done or d.key in stack:
            return
        for child in sorted(d.children, key=lambda c: c.descriptor_key):
            if child.descriptor_key in by_key:
                visit(by_key[child.descriptor_key], stack | {d.key})
        done.add(d.key)
        ordered.append(d)

    for d in sorted(descriptors, key=lambda x: x.key):
        visit(d, frozenset())
    return ordered


INTERACTION_DESCRIPTORS: Final = (
    "interaction_requests.interaction_requests",
    "interaction_admissions.interaction_admissions",
)
"""The descriptors whose default retention the setting `interactionRetention` gives."""


def configured_defaults(settings: LarkTimelineSettings) -> dict[str, int]:
    """Default retention days the settings give descriptors: `interactionRetention` (whole
    days, rounded up) for finished review cards and their admissions. The registry check
    refuses a value outside a descriptor's bounds, naming the bound."""
    days = math.ceil(settings.interaction_retention / timedelta(days=1))
    return {key: days for key in INTERACTION_DESCRIPTORS}


def load_registry(
    modules: Iterable[ModuleType] | None = None,
    *,
    default_days: Mapping[str, int] | None = None,
) -> Registry:
    """The validated registry, or RegistryInvalid naming every problem. `default_days`
    replaces the default retention of the named descriptors (`configured_defaults`) before the
    check, so a configured value outside a descriptor's bounds is refused like a declared one."""
    found = [
        (module, replace(d, default_retention_days=default_days[d.key]))
        if default_days and d.key in default_days
        else (module, d)
        for module, d in declarations(modules)
    ]
    errors = check_declarations(found)
    if errors:
        raise RegistryInvalid(errors)
    return Registry({d.key: d for _, d in found})
