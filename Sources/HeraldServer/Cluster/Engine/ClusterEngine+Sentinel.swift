/// Following a failover the links did not notice (`cluster.sentinel`): a primary demoted by
/// Sentinel (`SENTINEL FAILOVER`, or an old primary that stayed reachable) may keep its
/// connections and take writes for seconds before Sentinel turns it into a replica. Once a
/// period the engine asks the sentinels where the primary is; when they name another one,
/// every link drops and reconnects there (asking again, `RedisLink.resolve`), so writes stop
/// going to a server whose data the cluster no longer reads.
extension ClusterEngine {
    /// Asks the sentinels (one short query, off the loop's critical path) and drops the
    /// links when the primary moved.
    func followSentinel() {
        guard let sentinel, commands.isConnected || messages.isConnected || control.isConnected else { return }
        sentinel.resolve { [weak self] address in
            guard let self, let address else { return }
            for link in [commands, messages, control] where link.isConnected && (link.host != address.host || link.port != address.port) {
                server.logger.warn("cluster: Sentinel names another Redis primary; reconnecting",
                                   ["from": "\(link.host):\(link.port)", "to": address.description])
                link.drop()
            }
        }
    }
}
