import Foundation
import Synchronization
import Herald
import HeraldWire

/// `herald reply` and `herald handle`: the CLI as a responder and as a signal handler, for
/// scripts and for trying out requesters and senders without writing a program.
extension Commands {
    /// `reply CH [--data JSON] [--count N] [--group G] [--timeout S] [--json]`: answers every
    /// request on CH with the same data and prints each request it answered.
    func reply(_ client: HeraldClient, timeout: Double?) async throws(HeraldClientError) -> ExitCode {
        let answer = try flagJSON(invocation.dataText)
        let json = invocation.json
        let done = ExitSignal()
        let left = invocation.count.map { Counter($0) }
        let options = SubscriptionOptions(group: invocation.group)
        let subscription = try client.subscribe(raw: channel, options: options) { [weak client] data, meta in
            // Plain events on the channel carry no reply token: not a request, nothing to answer.
            guard let token = meta.replyToken, let client else { return }
            do throws(HeraldClientError) {
                try client.reply(to: token, raw: answer)
            } catch {
                Output.error("herald: reply: \(error)")
                done.finish(.connection)
                return
            }
            Output.line(json ? Self.jsonLine(data, meta) : Self.prettyLine(data, meta))
            if left?.takeOne() == true { done.finish(.success) }
        }
        try await subscription.ready()
        return await serve(subscription, client: client, done: done, timeout: timeout)
    }

    /// `handle CH [--stop] [--callback JSON] [--count N] [--timeout S] [--json]`: a signal
    /// handler at level CH; sends the callback (if any), then answers pass or stop, and prints
    /// each offer: "LEVEL ORIGIN FROM DATA" (or one JSON object per line).
    func handle(_ client: HeraldClient, timeout: Double?) async throws(HeraldClientError) -> ExitCode {
        let callback = try flagJSON(invocation.callbackText)
        let action: SignalAction = invocation.stop ? .stop : .pass
        let json = invocation.json
        let done = ExitSignal()
        let left = invocation.count.map { Counter($0) }
        let subscription = try client.handle(raw: channel) { data, context in
            if let callback { try context.callback(raw: callback) }
            Output.line(json ? Self.signalJSONLine(data, context) : Self.signalPrettyLine(data, context))
            if left?.takeOne() == true {
                // Answer before finishing: `serve`'s closing ping then goes after the answer, so
                // the answer reaches the daemon before the process ends.
                context.answer(action)
                done.finish(.success)
            }
            return action
        }
        try await subscription.ready()
        return await serve(subscription, client: client, done: done, timeout: timeout)
    }

    /// Waits until the count is reached, the timeout passes (exit 0, or 5 when `--count` was
    /// not reached) or the connection is lost (exit 3).
    private func serve(_ subscription: Subscription, client: HeraldClient, done: ExitSignal, timeout: Double?) async -> ExitCode {
        let code = await waitForExit(done, client: client, timeout: timeout)
        subscription.cancel()
        // A round trip before exiting: the daemon answers the ping after reading every frame
        // queued before it, so the last reply or `handled` is written, not lost at exit.
        if code != .connection { _ = try? await client.ping() }
        return code
    }

    /// A flag's JSON text, validated (exit 2 when it is not JSON); nil when the flag is absent.
    private func flagJSON(_ text: String?) throws(HeraldClientError) -> RawJSON? {
        guard let text else { return nil }
        return try RawJSON(validating: text)
    }

    static func signalPrettyLine(_ data: RawJSON?, _ context: SignalContext) -> String {
        [context.level.name, context.origin.name, context.sender ?? "-", data?.description ?? "-"].joined(separator: " ")
    }

    static func signalJSONLine(_ data: RawJSON?, _ context: SignalContext) -> String {
        var line: [UInt8] = []
        line.appendRaw("{\"level\":")
        line.appendJSONString(context.level.name)
        line.appendRaw(",\"origin\":")
        line.appendJSONString(context.origin.name)
        line.appendRaw(",\"id\":")
        line.appendJSONString(context.id)
        return finishJSONLine(&line, from: context.sender, data: data)
    }
}

/// Counts down deliveries across handler threads; `takeOne` is true for the one that reaches 0.
final class Counter: Sendable {
    private let left: Mutex<Int>

    init(_ count: Int) { left = Mutex(count) }

    func takeOne() -> Bool {
        left.withLock { left in
            left -= 1
            return left == 0
        }
    }
}
