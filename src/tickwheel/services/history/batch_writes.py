"""How one batch of the history sink reaches the store: each table in `TABLE_ORDER`, its
fast-path frames (decision 0123) and then its rows, each insert with its deduplication token
(decision 0030).

One insert per table: where several frames fill the same table (the worker's events and
the `requested` rows the requests stand for, both in `execution_events`), a store that can
(`EncodedUnionInsert`: embedded chDB) takes them in one statement, so the batch makes one
part of that table, not one per frame, and analyses one statement (decision 0187). If that
insert is refused, each frame is inserted alone as before, and only the frame whose insert
is refused falls back to the row path, which dead-letters the bad record and stores the rest.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from tickwheel.ports.history import HistoryStore, HistoryStoreError
from tickwheel.services.history.batch import Batch
from tickwheel.services.history.columnar import (
    EncodedInsert,
    EncodedUnionInsert,
    Frame,
    dedup_token,
)
from tickwheel.services.history.routes import Route
from tickwheel.services.history.rows import Row, Source
from tickwheel.services.history.sink_stats import SinkStats

log = logging.getLogger("tickwheel.history")

#: Insert order within a batch: definitions first, so a reader never sees an execution of a
#: job whose definition the same batch still holds.
TABLE_ORDER = (
    "job_definitions",
    "calendar_events",
    "execution_requests",
    "execution_events",
    "dead_letters",
    "workflow_events",
    "alerts",
)
INSERT_BACKOFF_S = (0.5, 1.0, 2.0, 5.0, 10.0)

#: One table of one frame: the frame, and the index of the table among its kind's tables.
FrameTable = tuple[Frame, int]


class BatchWrites:
    """The write half of `HistorySink` (its `_insert_batch`); the sink supplies the store,
    the routes, the stats and the row path a refused frame falls back to."""

    store: HistoryStore
    routes: dict[str, Route[Any]]
    after_insert: Callable[[int], None] | None
    stats: SinkStats
    _encoded_store: EncodedInsert | None
    _sleep: Callable[[float], None]

    def _accept_row(self, batch: Batch, route: Route[Any], message: Any, source: Source) -> None:
        raise NotImplementedError

    def _insert_batch(self, batch: Batch) -> None:
        frame_tables: dict[str, list[FrameTable]] = {}
        for frame in batch.frames.values():
            for index, target in enumerate(frame.kind.tables):
                frame_tables.setdefault(target.table, []).append((frame, index))
        written = 0
        framed: dict[str, bytes] = {}
        inserted: set[str] = set()
        for table in sorted(set(batch.rows) | set(frame_tables), key=_table_rank):
            # Not the frames fallen back to the row path at an earlier table.
            live = [(f, i) for f, i in frame_tables.get(table, []) if f.kind.schema in batch.frames]
            written += self._insert_frames(batch, table, live, framed)
            written += self._insert_rows(batch, table)
            inserted.add(table)
        # Rows of a table already passed, from a frame that fell back after its first table.
        for table in sorted(set(batch.rows) - inserted, key=_table_rank):
            written += self._insert_rows(batch, table)
        self.stats.batches += 1
        self.stats.rows += written
        self.stats.last_batch_rows = written
        if self.after_insert is not None:
            self.after_insert(self.stats.batches)

    def _insert_frames(
        self, batch: Batch, table: str, live: list[FrameTable], framed: dict[str, bytes]
    ) -> int:
        """Every frame that fills `table`: in one insert where the store can, else (or if
        that insert is refused) one insert per frame."""
        store = self._encoded_store
        if len(live) > 1 and isinstance(store, EncodedUnionInsert):
            # The token is over every frame's bytes in a fixed order (by schema), so the same
            # records delivered again in the same cut give the same token.
            live = sorted(live, key=lambda frame_table: frame_table[0].kind.schema)
            datas = [_frame_data(frame, framed) for frame, _index in live]
            target = live[0][0].kind.tables[live[0][1]]
            sources = [
                (frame.kind.tables[index].select, frame.kind.structure, data)
                for (frame, index), data in zip(live, datas, strict=True)
            ]
            try:
                store.insert_encoded_union(
                    table, target.columns, sources, dedup_token=dedup_token(table, *datas)
                )
                return sum(len(frame.messages) for frame, _index in live)
            except HistoryStoreError as exc:
                log.warning(
                    "the joined fast insert refused a batch; its frames go in one by one",
                    extra={
                        "action": "history_fast_union_refused",
                        "table": table,
                        "error": str(exc)[:500],
                    },
                )
        return sum(self._insert_frame(batch, frame, index, framed) for frame, index in live)

    def _insert_frame(
        self, batch: Batch, frame: Frame, index: int, framed: dict[str, bytes]
    ) -> int:
        """One table of a frame through the fast path; if the store refuses it, every record
        of the frame goes to the row path instead, which stores what it can and dead-letters
        the rest."""
        store = self._encoded_store
        assert store is not None  # frames exist only with an encoding store
        kind = frame.kind
        data = _frame_data(frame, framed)
        table = kind.tables[index]
        try:
            store.insert_encoded(
                table.table,
                table.columns,
                table.select,
                kind.structure,
                data,
                dedup_token=dedup_token(table.table, data),
            )
            return len(frame.messages)
        except HistoryStoreError as exc:
            # After its first table, the rows of the earlier ones are inserted again: copies
            # with the same event ids, which FINAL and uniqExact collapse (decision 0030).
            log.warning(
                "the fast insert refused a batch; its records go through the row path",
                extra={
                    "action": "history_fast_path_refused",
                    "table": table.table,
                    "records": len(frame.messages),
                    "error": str(exc)[:500],
                },
            )
        del batch.frames[kind.schema]
        for message in frame.messages:
            route = self.routes[message.topic()]
            source = Source(
                message.topic(), message.partition(), message.offset(), int(message.timestamp()[1])
            )
            self._accept_row(batch, route, message, source)
        return 0

    def _insert_rows(self, batch: Batch, table: str) -> int:
        table_rows = batch.rows.get(table, [])
        if table_rows:
            self._insert(table, table_rows, batch.dedup_token(table))
        return len(table_rows)

    def _insert(self, table: str, table_rows: list[Row], token: str) -> None:
        for attempt, pause in enumerate((*INSERT_BACKOFF_S, None), start=1):
            try:
                self.store.insert(table, table_rows, dedup_token=token)
                return
            except HistoryStoreError as exc:
                if pause is None:
                    raise
                log.warning(
                    "insert failed; retrying",
                    extra={
                        "action": "history_insert_retry",
                        "table": table,
                        "attempt": attempt,
                        "error": str(exc),
                    },
                )
                self._sleep(pause)


def _frame_data(frame: Frame, framed: dict[str, bytes]) -> bytes:
    """The frame's bytes, joined once per batch however many tables read them."""
    data = framed.get(frame.kind.schema)
    if data is None:
        data = framed[frame.kind.schema] = frame.data()
    return data


def _table_rank(table: str) -> int:
    return TABLE_ORDER.index(table) if table in TABLE_ORDER else len(TABLE_ORDER)
