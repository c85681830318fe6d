import Foundation
import Herald
import HeraldArguments
import HeraldWire

/// The `herald` commands: each returns the process's exit code.
struct Commands {
    let invocation: Invocation

    /// Runs the command line; never throws, every outcome is an exit code.
    static func run(_ arguments: [String]) async -> ExitCode {
        let invocation: Invocation
        do {
            invocation = try Invocation.parse(arguments)
        } catch {
            Output.error("herald: \(error)")
            return .usage
        }
        guard let command = invocation.command, command != "help" else {
            if let topic = invocation.positionals.first, let text = Help.text(for: topic) {
                Output.line(text)
                return .success
            }
            Output.line(Help.overview)
            return invocation.help || invocation.command == "help" ? .success : .usage
        }
        guard let help = Help.text(for: command) else {
            Output.error("herald: unknown command \"\(command)\" (see herald --help)")
            return .usage
        }
        if invocation.help {
            Output.line(help)
            return .success
        }
        return await Commands(invocation: invocation).run(command)
    }

    private func run(_ command: String) async -> ExitCode {
        do throws(ArgumentError) {
            switch command {
            case "pub": try invocation.check(allowed: ["--receipt", "--json"], positionals: 1...2, command: command)
            case "sub": try invocation.check(allowed: ["--count", "--group", "--timeout", "--json"], positionals: 1...1, command: command)
            case "req": try invocation.check(allowed: ["--timeout", "--json"], positionals: 1...2, command: command)
            case "signal": try invocation.check(allowed: ["--timeout"], positionals: 1...2, command: command)
            case "get": try invocation.check(allowed: ["--json"], positionals: 1...1, command: command)
            case "set": try invocation.check(allowed: ["--if-rev"], positionals: 2...2, command: command)
            case "stats": try invocation.check(allowed: ["--json"], positionals: 0...0, command: command)
            case "reply": try invocation.check(allowed: ["--data", "--count", "--group", "--timeout", "--json"], positionals: 1...1, command: command)
            case "handle": try invocation.check(allowed: ["--stop", "--callback", "--count", "--timeout", "--json"], positionals: 1...1, command: command)
            case "bench": try invocation.check(allowed: ["--count", "--size", "--timeout", "--json"], positionals: 0...1, command: command)
            case "presence": try invocation.check(allowed: ["--watch", "--count", "--timeout", "--json"], positionals: 1...1, command: command)
            case "clients": try invocation.check(allowed: ["--json"], positionals: 0...0, command: command)
            case "kick": try invocation.check(allowed: [], positionals: 1...1, command: command)
            case "handlers": try invocation.check(allowed: ["--json"], positionals: 1...1, command: command)
            default: try invocation.check(allowed: ["--json"], positionals: 0...1, command: command)
            }
        } catch {
            Output.error("herald: \(error)")
            return .usage
        }
        let timeout: Double?
        do throws(ArgumentError) {
            timeout = try invocation.timeoutSeconds()
        } catch {
            Output.error("herald: \(error)")
            return .usage
        }
        let client = HeraldClient(configuration: ClientConfiguration(
            endpoint: invocation.unixPath.map { .unix(path: $0) } ?? .tcp(host: invocation.host, port: invocation.port),
            name: invocation.name, token: invocation.token, reconnect: .never, tls: invocation.tls.options))
        defer { client.close() }
        do throws(HeraldClientError) {
            try await client.connect()
            switch command {
            case "pub": return try await pub(client)
            case "sub": return try await sub(client, timeout: timeout)
            case "req": return try await req(client, timeout: timeout ?? 1)
            case "signal": return try await signal(client, timeout: timeout ?? 1)
            case "get": return try await get(client)
            case "set": return try await set(client)
            case "stats": return try await stats(client)
            case "reply": return try await reply(client, timeout: timeout)
            case "handle": return try await handle(client, timeout: timeout)
            case "bench": return try await bench(client, timeout: timeout)
            case "presence": return try await presence(client, timeout: timeout)
            case "clients": return try await clients(client)
            case "kick": return try await kick(client)
            case "handlers": return try await handlers(client)
            default: return try await channels(client)
            }
        } catch {
            return Self.fail(command, error)
        }
    }

    /// Maps a client error to a message and an exit code.
    static func fail(_ command: String, _ error: HeraldClientError) -> ExitCode {
        switch error {
        case .server(let code, let message, _):
            if code == "unknown_op" {
                Output.error("herald: \(command) is not supported by this daemon yet")
                return .unsupported
            }
            Output.error("herald: \(code): \(message)")
            return .serverError
        case .badChannel, .encoding:
            Output.error("herald: \(error)")
            return .usage
        case .connectionFailed, .notConnected, .disconnected, .closed:
            Output.error("herald: \(error)")
            return .connection
        case .timeout:
            Output.error("herald: \(command): no answer in time")
            return .timeout
        case .noResponders(let channel):
            Output.error("herald: \(command): no responders on \(channel)")
            return .noResponders
        default:
            Output.error("herald: \(error)")
            return .serverError
        }
    }

    /// The optional JSON argument at `index`; "-" reads standard input.
    /// - Throws: `.encoding` (exit 2) when it is not one JSON value.
    private func data(at index: Int) throws(HeraldClientError) -> RawJSON? {
        guard index < invocation.positionals.count else { return nil }
        let text = invocation.positionals[index]
        if text == "-" {
            let input = FileHandle.standardInput.readDataToEndOfFile()
            let trimmed = String(decoding: input, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            return trimmed.isEmpty ? nil : try RawJSON(validating: trimmed)
        }
        return try RawJSON(validating: text)
    }

    var channel: Channel { Channel(verbatim: invocation.positionals.first ?? "") }

    // MARK: Commands

    private func pub(_ client: HeraldClient) async throws(HeraldClientError) -> ExitCode {
        let receipt = try await client.publish(raw: data(at: 1), to: channel)
        if invocation.receipt {
            Output.line(invocation.json ? "{\"seq\":\(receipt.seq),\"receivers\":\(receipt.receivers)}"
                                        : "seq \(receipt.seq) receivers \(receipt.receivers)")
        }
        return .success
    }

    private func sub(_ client: HeraldClient, timeout: Double?) async throws(HeraldClientError) -> ExitCode {
        let json = invocation.json
        let done = ExitSignal()
        let lost = client.stateUpdates()
        let options = SubscriptionOptions(group: invocation.group, max: invocation.count)
        let subscription = try client.subscribe(raw: channel, options: options) { data, meta in
            Output.line(json ? Self.jsonLine(data, meta) : Self.prettyLine(data, meta))
            if meta.isLast { done.finish(.success) }
        }
        try await subscription.ready()
        let code = await waitForExit(done, client: client, timeout: timeout, states: lost)
        withExtendedLifetime(subscription) {}
        return code
    }

    /// Waits for the first of: `done` (the command's own end), the timeout (exit 0, or 5 when
    /// `--count` was not reached), or a lost connection (exit 3).
    /// - Parameter states: a state stream opened earlier, so a loss before this call is seen.
    func waitForExit(_ done: ExitSignal, client: HeraldClient, timeout: Double?,
                     states: AsyncStream<ConnectionState>? = nil) async -> ExitCode {
        let lost = states ?? client.stateUpdates()
        Task {
            for await state in lost {
                if case .disconnected(let reason) = state, reason != .closedByClient {
                    Output.error("herald: connection lost: \(reason)")
                    done.finish(.connection)
                }
            }
        }
        if let timeout {
            let expectsCount = invocation.count != nil
            Task {
                try? await Task.sleep(nanoseconds: UInt64(timeout * 1e9))
                done.finish(expectsCount ? .timeout : .success)
            }
        }
        return await done.wait()
    }

    /// `req CH [DATA]`: the reply's data (pretty) or `{"from":…,"data":…}` (`--json`).
    private func req(_ client: HeraldClient, timeout: Double) async throws(HeraldClientError) -> ExitCode {
        do throws(HeraldClientError) {
            let reply = try await client.request(raw: data(at: 1), to: channel, timeout: .seconds(min(timeout, 3600)))
            if invocation.json {
                var line: [UInt8] = []
                line.appendRaw("{\"from\":")
                if let from = reply.from { line.appendJSONString(from) } else { line.appendRaw("null") }
                if let data = reply.data {
                    line.appendRaw(",\"data\":")
                    line.append(contentsOf: data.bytes)
                }
                line.appendRaw("}")
                Output.line(String(decoding: line, as: UTF8.self))
            } else {
                Output.line(reply.data?.description ?? "-")
            }
            return .success
        } catch .timeout {
            Output.error("herald: req: no reply on \(channel.name) within \(Int((timeout * 1000).rounded())) ms")
            return .timeout
        }
    }

    /// `signal CH [DATA]`: each callback as `{"callback":DATA,"from":C}` as it comes, then the
    /// result `{"id","handled_by","at","hops","timeouts"}`.
    private func signal(_ client: HeraldClient, timeout: Double) async throws(HeraldClientError) -> ExitCode {
        let call = try client.signal(raw: data(at: 1), on: channel, timeout: .seconds(min(timeout, 3600)))
        for await callback in call.callbacks {
            var line: [UInt8] = []
            line.appendRaw("{\"callback\":")
            line.append(contentsOf: (callback.value ?? .null).bytes)
            line.appendRaw(",\"from\":")
            if let from = callback.from { line.appendJSONString(from) } else { line.appendRaw("null") }
            line.appendRaw("}")
            Output.line(String(decoding: line, as: UTF8.self))
        }
        let result = try await call.result()
        var line: [UInt8] = []
        line.appendRaw("{\"id\":")
        line.appendJSONString(result.id)
        line.appendRaw(",\"handled_by\":")
        if let handler = result.handledBy { line.appendJSONString(handler) } else { line.appendRaw("null") }
        line.appendRaw(",\"at\":")
        if let level = result.at { line.appendJSONString(level) } else { line.appendRaw("null") }
        line.appendRaw(",\"hops\":")
        line.appendInt(result.hops)
        line.appendRaw(",\"timeouts\":[")
        for (index, id) in result.timeouts.enumerated() {
            if index > 0 { line.appendRaw(",") }
            line.appendJSONString(id)
        }
        line.appendRaw("]}")
        Output.line(String(decoding: line, as: UTF8.self))
        return .success
    }

    private func get(_ client: HeraldClient) async throws(HeraldClientError) -> ExitCode {
        let retained = try await client.get(rawAt: channel)
        let value = retained.value?.description ?? "null"
        Output.line(invocation.json ? "{\"rev\":\(retained.rev),\"value\":\(value)}" : value)
        return .success
    }

    private func set(_ client: HeraldClient) async throws(HeraldClientError) -> ExitCode {
        let rev = try await client.set(raw: data(at: 1) ?? .null, at: channel, ifRev: invocation.ifRev)
        Output.line("\(rev)")
        return .success
    }

    private func stats(_ client: HeraldClient) async throws(HeraldClientError) -> ExitCode {
        let stats = try await client.stats()
        if invocation.json {
            Output.line(stats.json.description)
        } else {
            for name in stats.names { Output.line("\(name) \(stats[name])") }
        }
        return .success
    }

    private func channels(_ client: HeraldClient) async throws(HeraldClientError) -> ExitCode {
        let pattern = invocation.positionals.first.map { Channel(verbatim: $0) }
        for info in try await client.channels(matching: pattern) {
            if invocation.json {
                var line: [UInt8] = []
                line.appendRaw("{\"ch\":")
                line.appendJSONString(info.ch)
                line.appendRaw(",\"subs\":")
                line.appendInt(info.subs)
                line.appendRaw(",\"owner\":")
                if let owner = info.owner { line.appendJSONString(owner) } else { line.appendRaw("null") }
                line.appendRaw(info.hasValue ? ",\"has_value\":true,\"seq\":" : ",\"has_value\":false,\"seq\":")
                line.appendInt(info.seq)
                if let link = info.link {
                    line.appendRaw(",\"link\":")
                    line.appendJSONString(link)
                }
                line.appendRaw("}")
                Output.line(String(decoding: line, as: UTF8.self))
            } else {
                Output.line("\(info.ch) subs=\(info.subs) seq=\(info.seq)" + (info.owner.map { " owner=\($0)" } ?? "")
                            + (info.link.map { " link=\($0)" } ?? ""))
            }
        }
        return .success
    }

    // MARK: Formatting

    static func prettyLine(_ data: RawJSON?, _ meta: EventMetadata) -> String {
        var parts = [meta.channel.name]
        if let seq = meta.seq { parts.append("#\(seq)") }
        if let sender = meta.sender { parts.append(sender) }
        parts.append(data?.description ?? "-")
        return parts.joined(separator: " ")
    }

    static func jsonLine(_ data: RawJSON?, _ meta: EventMetadata) -> String {
        var line: [UInt8] = []
        line.appendRaw("{\"ch\":")
        line.appendJSONString(meta.channel.name)
        if let seq = meta.seq {
            line.appendRaw(",\"seq\":")
            line.appendInt(seq)
        }
        return finishJSONLine(&line, from: meta.sender, data: data)
    }

    /// Appends the fields every `--json` line ends with (`from`, `data`, each when present),
    /// closes the object and returns the line.
    static func finishJSONLine(_ line: inout [UInt8], from sender: String?, data: RawJSON?) -> String {
        if let sender {
            line.appendRaw(",\"from\":")
            line.appendJSONString(sender)
        }
        if let data {
            line.appendRaw(",\"data\":")
            line.append(contentsOf: data.bytes)
        }
        line.appendRaw("}")
        return String(decoding: line, as: UTF8.self)
    }
}

/// The first of several racing outcomes (last event, timeout, lost connection) wins.
final class ExitSignal: Sendable {
    private let stream: AsyncStream<ExitCode>
    private let continuation: AsyncStream<ExitCode>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: ExitCode.self, bufferingPolicy: .bufferingOldest(1))
    }

    func finish(_ code: ExitCode) { continuation.yield(code) }

    func wait() async -> ExitCode {
        for await code in stream { return code }
        return .success
    }
}
