"""Benchmarks: sbmgmt against the official azure-servicebus SDK on the fake namespace."""
