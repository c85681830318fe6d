import Herald

// The examples quoted in docs/client.md "Presence" and the DocC article "Presence".
// PresenceClientTests runs them against a real heraldd.

// MARK: Presence

/// What a room shows of each person in it: the name their app put in `hello`'s `info`.
public struct RoomProfile: Codable, Sendable, Equatable {
    public var name: String

    /// A profile with a display name.
    public init(name: String) { self.name = name }
}

/// A client that names its app instance (an id kept across launches, so a quick reconnect
/// keeps its place in every room under `presence_grace_ms`) and tells the others its name.
func roomClient(port: Int, installID: String, name: String) throws(HeraldClientError) -> HeraldClient {
    let profile = try RawJSON(encoding: RoomProfile(name: name))
    let configuration = ClientConfiguration(endpoint: .tcp(host: "127.0.0.1", port: port), instance: installID, info: profile)
    return HeraldClient(configuration: configuration)
}

/// Who is in a room, kept current: members with their profiles, and the count.
func people(in room: Channel, _ client: HeraldClient) async throws(HeraldClientError) -> RemotePresence<RoomProfile> {
    let people = try await client.presence(of: room, info: RoomProfile.self)
    print("\(people.count) here: \(people.members.compactMap { $0.info?.name })")
    return people
}

/// Greets each person who comes in, until the task is cancelled or the client closes.
func greetArrivals(_ people: RemotePresence<RoomProfile>, greet: @Sendable (String) -> Void) async {
    for await change in people.changes() {
        if case .joined(let member) = change { greet(member.info?.name ?? "someone") }
    }
}

/// The names in a room for a view: a calculated value on the members, mirrored on the main actor.
@MainActor func roomNames(_ people: RemotePresence<RoomProfile>) -> MainActorValue<[String]> {
    people.map { state in state.members.compactMap { $0.info?.name } }.onMainActor()
}
