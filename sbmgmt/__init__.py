"""sbmgmt: Azure Service Bus management operations over AMQP 1.0."""
