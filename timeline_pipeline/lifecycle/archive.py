"""The archive port and its local-directory adapter (docs/lifecycle.md, "Purge runbook").

A purge that archives writes each batch as one gzip-compressed JSON Lines part, fsyncs it, reads
it back and checks its sha256 and row count, records it in the run's manifest (rewritten
atomically after every part), and only then lets the engine delete the batch's rows. A process
killed at any point leaves every deleted row in a verified part; rows archived but not yet
deleted are archived twice at worst, never lost. The manifest carries, per descriptor, the row
count, the cursor range and each part's sha256; `verify_manifest` checks them all again.

Layout: `<dir>/<run_key>/manifest.json` and `<dir>/<run_key>/<descriptor>/part-000001.jsonl.gz`.
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO, Final, Protocol

from timeline_pipeline.lifecycle.errors import ArchiveUnavailable, ArchiveVerifyFailed

FORMAT: Final = "jsonl.gz"
MANIFEST: Final = "manifest.json"


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    raise TypeError(f"cannot archive a {type(value).__name__}")


def _cause(exc: OSError) -> str:
    name = errno.errorcode.get(exc.errno or 0, "error")
    return f"{name} ({os.strerror(exc.errno)})" if exc.errno else type(exc).__name__


@dataclass
class PartInfo:
    file: str
    rows: int
    sha256: str
    bytes: int
    cursor_min: str
    cursor_max: str
    id_min: int
    id_max: int


@dataclass
class DescriptorArchive:
    rows: int = 0
    cursor_min: str | None = None
    cursor_max: str | None = None
    parts: list[PartInfo] = field(default_factory=list)


@dataclass
class Manifest:
    run_key: str
    as_of: str
    format: str = FORMAT
    total_rows: int = 0
    descriptors: dict[str, DescriptorArchive] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Manifest:
        descriptors = {
            key: DescriptorArchive(
                rows=v["rows"],
                cursor_min=v["cursor_min"],
                cursor_max=v["cursor_max"],
                parts=[PartInfo(**p) for p in v["parts"]],
            )
            for key, v in data["descriptors"].items()
        }
        return cls(
            run_key=data["run_key"],
            as_of=data["as_of"],
            format=data["format"],
            total_rows=data["total_rows"],
            descriptors=descriptors,
        )


class ArchivePort(Protocol):
    """Where archived rows go; the engine deletes a batch only after `write_part` returned."""

    def open_run(self, run_key: str, as_of: datetime) -> None: ...

    def write_part(
        self, descriptor_key: str, rows: Sequence[Mapping[str, Any]], cursor_column: str
    ) -> PartInfo: ...

    def manifest_location(self) -> str: ...


def _discard(path: Path) -> None:
    """Remove a half-written temporary file (only a regular file: never a device)."""
    if path.is_file():
        path.unlink()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _replace_durably(
    path: Path, tmp: Path, write: Callable[[BinaryIO], object], what: str, *, parents: bool = False
) -> None:
    """Put `path` in place whole or not at all (docs/lifecycle.md, "Purge runbook"):
    `write` fills `tmp`, which is fsynced and renamed over `path`, then the directory is
    fsynced. `parents` makes the directory first. A failure removes the half-written `tmp` and
    refuses the run, naming `what` and the cause."""
    try:
        if parents:
            path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as raw:
            write(raw)
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except OSError as exc:
        _discard(tmp)
        raise ArchiveUnavailable(f"--archive-dir: writing {what} failed: {_cause(exc)}") from None


class LocalDirectoryArchive:
    """The archive port on a local (or mounted) directory."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._run_dir: Path | None = None
        self._manifest: Manifest | None = None

    def open_run(self, run_key: str, as_of: datetime) -> None:
        """Make the run's directory and prove it is writable, before anything is deleted."""
        if self.root.exists() and not self.root.is_dir():
            raise ArchiveUnavailable(f"--archive-dir: {self.root} is not a directory")
        run_dir = self.root / run_key
        probe = run_dir / ".probe"
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
            with open(probe, "wb") as handle:
                handle.write(b"probe")
                handle.flush()
                os.fsync(handle.fileno())
            probe.unlink()
        except OSError as exc:
            raise ArchiveUnavailable(
                f"--archive-dir: {self.root} is not writable: {_cause(exc)}"
            ) from None
        self._run_dir = run_dir
        self._manifest = Manifest(run_key=run_key, as_of=as_of.isoformat())
        self._write_manifest()

    def manifest_location(self) -> str:
        assert self._run_dir is not None
        return str(self._run_dir / MANIFEST)

    def _part_path(self, descriptor_key: str, number: int) -> Path:
        assert self._run_dir is not None
        return self._run_dir / descriptor_key / f"part-{number:06d}.jsonl.gz"

    def _temporary_path(self, path: Path) -> Path:
        """Where a part is written before it is renamed into place."""
        return path.with_name(path.name + ".tmp")

    def write_part(
        self, descriptor_key: str, rows: Sequence[Mapping[str, Any]], cursor_column: str
    ) -> PartInfo:
        assert self._manifest is not None
        assert self._run_dir is not None
        entry = self._manifest.descriptors.setdefault(descriptor_key, DescriptorArchive())
        path = self._part_path(descriptor_key, len(entry.parts) + 1)
        lines = [json.dumps(dict(r), default=_json_default, sort_keys=True) for r in rows]
        payload = ("\n".join(lines) + "\n").encode("utf-8")

        def write(raw: BinaryIO) -> None:
            with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=6) as zipped:
                zipped.write(payload)

        tmp = self._temporary_path(path)
        _replace_durably(path, tmp, write, descriptor_key, parents=True)
        cursors = [_json_default(r[cursor_column]) for r in rows]
        ids = [int(r["id"]) for r in rows]
        data = path.read_bytes()
        part = PartInfo(
            file=str(path.relative_to(self._run_dir)),
            rows=len(rows),
            sha256=hashlib.sha256(data).hexdigest(),
            bytes=len(data),
            cursor_min=min(cursors),
            cursor_max=max(cursors),
            id_min=min(ids),
            id_max=max(ids),
        )
        verify_part(self._run_dir, part, parse=False)  # the lines were just made by json.dumps
        entry.parts.append(part)
        entry.rows += part.rows
        entry.cursor_min = min(filter(None, [entry.cursor_min, part.cursor_min]))
        entry.cursor_max = max(filter(None, [entry.cursor_max, part.cursor_max]))
        self._manifest.total_rows += part.rows
        self._write_manifest()
        return part

    def _write_manifest(self) -> None:
        assert self._manifest is not None
        assert self._run_dir is not None
        path = self._run_dir / MANIFEST
        text = json.dumps(self._manifest.as_dict(), sort_keys=True, indent=1)
        _replace_durably(
            path,
            path.with_name(MANIFEST + ".tmp"),
            lambda raw: raw.write(text.encode("utf-8")),
            "the manifest",
        )


def verify_part(run_dir: Path, part: PartInfo, *, parse: bool = True) -> None:
    """The part's bytes, read back from disk, hash to its sha256 and hold exactly its rows (each
    a JSON object unless `parse` is off), or ArchiveVerifyFailed."""
    path = run_dir / part.file
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ArchiveVerifyFailed(f"archive part {part.file}: unreadable: {_cause(exc)}") from None
    if hashlib.sha256(data).hexdigest() != part.sha256:
        raise ArchiveVerifyFailed(f"archive part {part.file}: sha256 does not match")
    try:
        lines = gzip.decompress(data).splitlines()
        if parse:
            for line in lines:
                json.loads(line)
    except (OSError, EOFError, ValueError):
        raise ArchiveVerifyFailed(f"archive part {part.file}: not gzip JSON Lines") from None
    if len(lines) != part.rows:
        raise ArchiveVerifyFailed(
            f"archive part {part.file}: {len(lines)} rows, the manifest says {part.rows}"
        )


def load_manifest(path: Path) -> Manifest:
    try:
        return Manifest.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        raise ArchiveVerifyFailed(f"manifest {path}: unreadable or malformed") from None


def verify_manifest(path: Path) -> Manifest:
    """Every part of the manifest verified and every count adding up; ArchiveVerifyFailed
    naming the first that does not."""
    manifest = load_manifest(path)
    run_dir = Path(path).parent
    total = 0
    for key, entry in manifest.descriptors.items():
        for part in entry.parts:
            verify_part(run_dir, part)
        if sum(p.rows for p in entry.parts) != entry.rows:
            raise ArchiveVerifyFailed(f"manifest {path}: {key}: part rows do not add up")
        total += entry.rows
    if total != manifest.total_rows:
        raise ArchiveVerifyFailed(f"manifest {path}: total_rows does not add up")
    return manifest


def read_part_rows(run_dir: Path, part: PartInfo) -> list[dict[str, Any]]:
    """The rows of one part (restore and tests)."""
    data = (run_dir / part.file).read_bytes()
    return [json.loads(line) for line in gzip.decompress(data).splitlines()]
