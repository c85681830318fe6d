import Herald
import HeraldWire
import Synchronization

/// `herald presence CH [--watch]`: who is in a channel, and with `--watch` who comes and goes.
extension Commands {
    /// Lists every page of the channel's members, then (`--watch`) prints each event of
    /// `$presence.CH` until `--count`, `--timeout` or a lost connection.
    ///
    /// The watch subscribes before the listing is read, so no join or leave falls between the
    /// two; events that come while it is read are held and printed after it.
    func presence(_ client: HeraldClient, timeout: Double?) async throws(HeraldClientError) -> ExitCode {
        let json = invocation.json
        let done = ExitSignal()
        let lost = client.stateUpdates()
        let gate = PresenceGate()
        var watch: Subscription?
        if invocation.watch {
            let limit = invocation.count
            let printed = Mutex(0)
            watch = try client.subscribe(raw: channel.presenceChannel) { data, _ in
                guard let data, let line = Self.presenceEventLine(data, json: json) else { return }
                let count = printed.withLock { count -> Int in
                    count += 1
                    return count
                }
                if let limit, count > limit { return }   // the exit is under way
                gate.print(line)
                if let limit, count == limit { done.finish(.success) }
            }
            try await watch?.ready()
        }
        var after: String?
        var count = 0
        repeat {
            let page = try await client.presencePage(of: channel, after: after, limit: 1000)
            for member in page.members { Output.line(Self.memberLine(member, json: json)) }
            count = page.count
            after = page.next
        } while after != nil
        Output.line(json ? "{\"count\":\(count)}" : "count \(count)")
        guard let watch else { return .success }
        gate.open()
        let code = await waitForExit(done, client: client, timeout: timeout, states: lost)
        withExtendedLifetime(watch) {}
        return code
    }

    /// `CLIENT USER INFO`, or the member as one JSON object.
    static func memberLine(_ member: PresenceMember<ClientInfo>, json: Bool) -> String {
        if json {
            var line: [UInt8] = []
            line.appendRaw("{\"client\":")
            line.appendJSONString(member.client)
            if let user = member.user {
                line.appendRaw(",\"user\":")
                line.appendJSONString(user)
            }
            if let info = member.rawInfo {
                line.appendRaw(",\"info\":")
                line.append(contentsOf: info.bytes)
            }
            line.appendRaw("}")
            return String(decoding: line, as: UTF8.self)
        }
        return "\(member.client) \(member.user ?? "-") \(member.rawInfo?.description ?? "-")"
    }

    /// A `$presence` event's line: `join|leave CLIENT USER INFO` or `count N`; with `json` the
    /// event's data unchanged. Nil for data that is not a presence event.
    static func presenceEventLine(_ data: RawJSON, json: Bool) -> String? {
        guard let change = PresenceChange<ClientInfo>(event: data) else { return nil }
        if json { return data.description }
        switch change {
        case .joined(let member): return "join " + memberLine(member, json: false)
        case .left(let member): return "leave " + memberLine(member, json: false)
        case .count(let count): return "count \(count)"
        case .nodeCount(let node, let count): return "count \(count) node \(node)"
        case .resynced(let state): return "count \(state.count)"
        }
    }
}

/// Holds `--watch` lines until the listing is printed, then prints them in order.
final class PresenceGate: Sendable {
    private let state = Mutex<(open: Bool, held: [String])>((false, []))

    /// Prints `line` now, or after the listing when it is not printed yet.
    func print(_ line: String) {
        state.withLock { state in
            if state.open { Output.line(line) } else { state.held.append(line) }
        }
    }

    /// The listing is printed: prints what was held, and lets later lines through.
    func open() {
        state.withLock { state in
            for line in state.held { Output.line(line) }
            state.held = []
            state.open = true
        }
    }
}
