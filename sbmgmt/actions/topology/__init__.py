"""A namespace's entities as a file: export, plan, apply, prune; and one entity's create,
update and delete, the same actions underneath.

The file is the Service Bus emulator's Config.json (:mod:`._model`: what the emulator's
format cannot hold is kept in an ``x-sbmgmt`` object beside each entity's ``Properties``;
:mod:`._fields` lists every property). :func:`export_topology` reads a namespace through
the official administration client (``ServiceBusAdministrationClient``, the ``admin``
extra), several listings in flight; :func:`plan` compares a file with the namespace and
counts the messages of what it would delete; :func:`apply_plan` carries a plan out, several
requests in flight, phase by phase (:mod:`._apply` says why in that order). The module
:mod:`._single` builds one-change plans for ``sbmgmt entities create | update | delete``
and the explorer's forms. docs/topology.md is the guide.
"""

from ._apply import ApplyOutcome, ApplyReport, PlanRefusedError, apply_plan
from ._export import IN_FLIGHT, export_topology
from ._fields import FIELDS, NEVER, STATUSES, Field, Form, fields_of
from ._model import (
    EXTENSION,
    EntitySpec,
    RuleSpec,
    Topology,
    TopologyFileError,
    emulator_limits,
    read_topology,
    rule_spec,
    write_topology,
)
from ._plan import Change, ChangeKind, Plan, diff, plan
from ._single import (
    create_plan,
    current_entity,
    delete_plan,
    rule_plan,
    split_path,
    update_plan,
)

__all__ = ["EXTENSION", "FIELDS", "IN_FLIGHT", "NEVER", "STATUSES", "ApplyOutcome", "ApplyReport",
           "Change", "ChangeKind", "EntitySpec", "Field", "Form", "Plan", "PlanRefusedError",
           "RuleSpec", "Topology", "TopologyFileError", "apply_plan", "create_plan",
           "current_entity", "delete_plan", "diff", "emulator_limits", "export_topology",
           "fields_of", "plan", "read_topology", "rule_plan", "rule_spec", "split_path",
           "update_plan", "write_topology"]
