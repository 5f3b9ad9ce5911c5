"""The controller's engine: where the kernel's decisions meet the store and the processes. ``engine``
runs the queue and carries out each transition (rows written, attempts stopped, the queue changed);
``attempt_lifecycle`` starts attempts and hands their ends back; ``recovery`` picks up what a previous
run left; ``launched`` keeps the decoded requests; ``budgets`` the users' bands and order;
``endpoint_registry`` Iris's EndpointService with its leases; ``cluster`` the cluster profile the
controller stands in for.
"""
