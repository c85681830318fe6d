/// Asking Sentinel for the primary with hiredis's blocking API, at join (before the loops
/// run), so a node whose sentinels cannot name a reachable primary refuses to start naming
/// what each one said. At run time `SentinelResolver` asks the same question without
/// blocking the loop.
enum SentinelLookup {
    /// The primary of `sentinel.master`: the sentinels are asked in order
    /// (`SENTINEL get-master-addr-by-name`), and an answer counts only when that server
    /// says it is a primary (`ROLE`), so a sentinel that has not seen a failover yet is
    /// passed over. The sentinels get `sentinel.credentials`, the primary `credentials`
    /// (the data Redis's). - Throws: `ClusterError` listing each sentinel's outcome.
    static func primary(of sentinel: SentinelSettings, credentials: RedisCredentials? = nil) throws(ClusterError) -> RedisAddress {
        var outcomes: [String] = []
        for address in sentinel.addresses {
            do throws(ClusterError) {
                let link = try BlockingRedis(address, credentials: sentinel.credentials)
                defer { link.close() }
                let reply = try link.run(["SENTINEL", "get-master-addr-by-name", sentinel.master])
                guard let primary = primaryAddress(in: reply) else {
                    outcomes.append("\(address): does not know \"\(sentinel.master)\"")
                    continue
                }
                let server = try BlockingRedis(primary, credentials: credentials)
                defer { server.close() }
                guard isPrimary(try server.run(["ROLE"])) else {
                    outcomes.append("\(address): named \(primary), which is not a primary")
                    continue
                }
                return primary
            } catch {
                outcomes.append(error.description)
            }
        }
        throw ClusterError("no sentinel named a reachable primary for \"\(sentinel.master)\": " + outcomes.joined(separator: "; "))
    }

    /// The address in a `get-master-addr-by-name` reply (`[host, port]`), nil for anything else.
    static func primaryAddress(in reply: RedisReply) -> RedisAddress? {
        guard let parts = reply.elements, parts.count == 2, let host = parts[0].bytes, let port = parts[1].bytes,
              let number = Int(String(decoding: port, as: UTF8.self)), (1...65535).contains(number), !host.isEmpty else { return nil }
        return RedisAddress(host: String(decoding: host, as: UTF8.self), port: number)
    }

    /// Whether a `ROLE` reply says `master`.
    static func isPrimary(_ reply: RedisReply) -> Bool {
        reply.elements?.first?.bytes == Array("master".utf8)
    }
}
