import Herald
import HeraldWire

/// `herald clients`, `herald kick CLIENT` and `herald handlers CHANNEL` (issue 37, admin ops).
extension Commands {
    /// Lists every connection, page by page: `CLIENT USER NAME ADDR TRANSPORT SUBS PENDING
    /// DROPPED CONNECTED_MS` per line ("-" for no user or name), or one JSON object per line.
    func clients(_ client: HeraldClient) async throws(HeraldClientError) -> ExitCode {
        var after: String?
        repeat {
            let page = try await client.connectedClients(after: after, limit: 1000)
            for entry in page.clients { Output.line(Self.clientLine(entry, json: invocation.json)) }
            after = page.next
        } while after != nil
        return .success
    }

    /// Closes one connection; exit 0 when it was open, 4 when no such connection was.
    func kick(_ client: HeraldClient) async throws(HeraldClientError) -> ExitCode {
        let target = channel.name
        let done = try await client.kick(target)
        Output.line(done ? "kicked \(target)" : "no connection \(target)")
        return done ? .success : .notFound
    }

    /// Prints the signal handlers of one channel's level, one client id per line in the
    /// order a signal asks them, or with --json one array.
    func handlers(_ client: HeraldClient) async throws(HeraldClientError) -> ExitCode {
        let ids = try await client.handlers(of: channel.name)
        if invocation.json {
            var line: [UInt8] = [UInt8(ascii: "[")]
            for (index, id) in ids.enumerated() {
                if index > 0 { line.append(UInt8(ascii: ",")) }
                line.appendJSONString(id)
            }
            line.append(UInt8(ascii: "]"))
            Output.line(String(decoding: line, as: UTF8.self))
        } else {
            for id in ids { Output.line(id) }
        }
        return .success
    }

    /// One connection as `clients` prints it.
    static func clientLine(_ entry: ConnectedClient, json: Bool) -> String {
        guard json else {
            return [entry.client, entry.user ?? "-", entry.name ?? "-", entry.addr, entry.transport, String(entry.subs),
                    String(entry.pendingBytes), String(entry.dropped), String(entry.connectedMs)].joined(separator: " ")
        }
        var line: [UInt8] = []
        line.appendRaw("{\"client\":")
        line.appendJSONString(entry.client)
        line.appendRaw(",\"user\":")
        if let user = entry.user { line.appendJSONString(user) } else { line.appendRaw("null") }
        line.appendRaw(",\"name\":")
        if let name = entry.name { line.appendJSONString(name) } else { line.appendRaw("null") }
        line.appendRaw(",\"addr\":")
        line.appendJSONString(entry.addr)
        line.appendRaw(",\"transport\":")
        line.appendJSONString(entry.transport)
        line += Array(",\"subs\":\(entry.subs),\"pending_bytes\":\(entry.pendingBytes),\"dropped\":\(entry.dropped),".utf8)
        line += Array("\"connected_ms\":\(entry.connectedMs)}".utf8)
        return String(decoding: line, as: UTF8.self)
    }
}
