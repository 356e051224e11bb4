-- calendar_versions: every recorded version of one holiday calendar, with what it changed
--
-- One row per record of the calendar on the `calendars` topic, in the order the timer applied
-- them (the topic's one partition, by offset): version, event_time (when it was put, or when
-- the delete reached the topic), deleted, its dates, weekend (0 = Sunday) and description,
-- and against the version before it: added (dates it holds that the one before did not),
-- removed (dates the one before held that it does not) and weekend_changed (never across a
-- delete). The first version adds all of its dates; a delete removes all; a put after a
-- delete adds all again.
--
-- @param name  the calendar's name
--
-- Correct with duplicate rows: FINAL (a redelivered record has the same sorting key).
SELECT
    version, event_time, deleted, dates, weekend, description,
    arrayFilter(d -> NOT has(previous_dates, d), dates) AS added,
    arrayFilter(d -> NOT has(dates, d), previous_dates) AS removed,
    NOT deleted AND NOT previous_deleted AND weekend != previous_weekend AS weekend_changed
FROM
(
    SELECT
        version, event_time, deleted, dates, weekend, description, source_offset,
        lagInFrame(deleted, 1, true) OVER history AS previous_deleted,
        lagInFrame(dates, 1, []) OVER history AS previous_dates,
        lagInFrame(weekend, 1, weekend) OVER history AS previous_weekend
    FROM calendar_events FINAL
    WHERE name = {name:String}
    WINDOW history AS (
        ORDER BY source_offset, event_time, event_id
        ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
    )
)
ORDER BY source_offset, event_time;
