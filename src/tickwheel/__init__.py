"""tickwheel: a Kafka-native job scheduler and durable workflow engine."""
