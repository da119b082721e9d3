"""A small controller runtime that knows nothing of Ray: client facade, informers and caches, work queue, controllers, manager, leader election, events, metrics."""
