"""faust-streaming for the stream consumers users write against tickwheel's topics.

tickwheel's own exactly-once paths (timer, orchestrator) run on confluent-kafka; faust-streaming
is for what it is good at — reacting to what tickwheel published (docs/decisions/0081):

    import faust
    from tickwheel.streams import AVRO_CODEC, app_settings, topic_names

    app = faust.App("my-reactions", **app_settings())
    events = app.topic(topic_names()["executions.events"], value_serializer=AVRO_CODEC)

    @app.agent(events)
    async def react(stream):
        async for event in stream:          # a tickwheel.records.ExecutionEvent (a dict)
            if is_undecodable(event):
                continue                    # see the example for the dead-letter path
            ...

Run with `--without-web` (faust's CLI turns the web server on whatever the app says) and with
`processing_guarantee="at_least_once"`, keying any effect by `execution_id` so a redelivery is
harmless. `tickwheel.streams.completions` is a complete example.
"""

from tickwheel.streams.codec import AVRO_CODEC, Undecodable, is_undecodable
from tickwheel.streams.settings import app_settings, topic_names

__all__ = ["AVRO_CODEC", "Undecodable", "app_settings", "is_undecodable", "topic_names"]
