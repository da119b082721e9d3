"""The RayCronJob controller (alpha, behind the `RayCronJob` feature gate): a RayJob from `jobTemplate` at
each tick of a cron schedule.

- `schedule`: fire times (robfig/cron's semantics: five fields, descriptors, `@every`, time zones);
- `child`: the RayJob made at a tick, its deterministic name and its owner reference;
- `reconciler`: validation, suspend, the next tick, the create and the `lastScheduleTime` write;
- `setup`: the ControllerSetup the operator installs when the gate is on.
"""
