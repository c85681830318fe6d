import Herald

// The examples quoted in docs/client.md ("Requests and responders", "Locks", "Instance
// channels"). They form the `HeraldExamples` target (folder Examples/), which the test target
// depends on, so `swift build --build-tests` compiles them and the tests in RequestReplyTests,
// LockTests, InstanceChannelTests and ExampleTests run them against a real heraldd.

// MARK: Requests and responders

/// A request type: its home channel and its reply type.
struct Add: HeraldRequest {
    typealias Reply = Int
    static let channel = Channel("calc", "add")
    var a: Int
    var b: Int
}

/// The responder side: every process that calls this shares the `calc.add` requests
/// (queue group `adders`); the handler's return value is the reply.
func startAdder(_ client: HeraldClient) throws(HeraldClientError) -> Subscription {
    try client.respond(to: Add.self, options: SubscriptionOptions(group: "adders")) { add, _ in
        add.a + add.b
    }
}

/// The requester side: a typed reply, and the two ways a request can go unanswered.
func addRemotely(_ client: HeraldClient, _ a: Int, _ b: Int) async -> String {
    do {
        let sum = try await client.request(Add(a: a, b: b), timeout: .seconds(10))
        return "sum \(sum)"
    } catch .noResponders {
        return "no adder is running"          // at once: nothing subscribes to calc.add
    } catch .timeout {
        return "no adder answered in time"    // the daemon's timeout_ms passed
    } catch {
        return "failed: \(error)"
    }
}

// MARK: Locks

/// Pauses live updates of the settings while the user edits them: a lock on a pattern
/// silences every subscription (anyone's) on matching channels, even ones made meanwhile.
func editWithoutLiveUpdates(_ client: HeraldClient, edit: @Sendable () async -> Void) async throws(HeraldClientError) {
    let settings = Channel("app", "settings", .rest)
    try await client.lock(settings)
    await edit()
    try await client.unlock(settings)
}

/// Mutes one of this client's own subscriptions by name, and asks who is muted.
func muteFeed(_ client: HeraldClient) async throws(HeraldClientError) -> LockStatus {
    try await client.lock(subscription: "feed")         // survives re-binding "feed" and reconnects
    return try await client.locks(on: ChatLine.channel)  // locked: ["c7/feed"], unlocked: […]
}

// MARK: Instance channels

/// The owner: a car announces its own channel. When it calls `remove`, closes or
/// disconnects, every exact subscriber of `car.42.moved` is told.
func carAppears(_ client: HeraldClient, id: Int) async throws(HeraldClientError) {
    try await client.declare(Car.moved(id: id).channel)
}

/// A follower of one car: the subscription's end says why it ended.
func followCar(_ client: HeraldClient, id: Int, onMove: @escaping @Sendable (Int) -> Void) async throws(HeraldClientError) -> SubscriptionEnd {
    let token = try client.subscribe(Car.moved(id: id)) { moved, _ in
        onMove(moved.x)
    }
    try await token.ready()
    let end = try await token.ended()
    if case .removed(let channel) = end {
        print("car \(id) left (\(channel) removed)")
    }
    return end
}
