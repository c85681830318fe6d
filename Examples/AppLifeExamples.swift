import Herald

// The examples quoted in docs/client.md ("Network and app life", "Offline publishes",
// "Objects own things") and in the DocC articles; PatternChecklistTests runs them against a
// real heraldd.

// MARK: Objects own things

/// A document's view model owns the document's instance channel: no async factory, no
/// `Task {}` in `deinit`. The channel ends with the model (at once through `deinit`, or within
/// a second through the weak owner), and a restore that fails for good is told to the model.
final class DocumentModel {
    let client: HeraldClient
    let channel: Channel

    init(client: HeraldClient, id: Int) {
        self.client = client
        self.channel = Channel("doc", id)
    }

    func open() async throws(HeraldClientError) {
        try await client.declare(channel, owner: self) { error in print("document channel: \(error)") }
    }

    deinit { client.scheduleRemoval(of: channel) }
}

// MARK: Network and app life

/// The app's scene phase drives the connection: background suspends, foreground resumes and
/// catches up.
func sceneBecame(active: Bool, _ client: HeraldClient) {
    if active { client.resume() } else { client.suspend() }
}

/// Waits until everything the client held is back after a (re)connection.
func waitUntilRestored(_ client: HeraldClient) async {
    for await state in client.stateUpdates() where state == .restored { return }
}

// MARK: Offline publishes

/// A client that keeps what the app publishes while offline and sends it, once, after the
/// reconnect; past 500 publishes or 256 KiB the publish throws `.offlineQueueFull`.
func offlineCapableClient(port: Int) -> HeraldClient {
    var configuration = ClientConfiguration(endpoint: .tcp(host: "127.0.0.1", port: port))
    configuration.offlinePublishing = OfflinePublishing(maxCount: 500, maxBytes: 256 << 10)
    return HeraldClient(configuration: configuration)
}

/// A producer at the network's pace: past the outbound bound it waits for room.
func postAll(_ lines: [ChatLine], _ client: HeraldClient) async throws(HeraldClientError) {
    for line in lines {
        do {
            try client.post(line)
        } catch .outboundFull {
            try await client.waitForOutboundRoom()
            try client.post(line)
        }
    }
}
