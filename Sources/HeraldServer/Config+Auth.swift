import HeraldBroker
import HeraldWire

/// Reads the `auth` section:
///
///     auth: { users: [ { name: "app", token_hash: "sha256:…:…",
///                        publish: { allow: ["app.>"], deny: ["app.admin.>"] },
///                        subscribe: { allow: [">"] } } ] }
///
/// Every problem names its place in the file (`auth.users[1].publish.allow[0]`), as the
/// rule table does for top-level keys, so the operator can fix it without reading source.
extension ConfigFileReader {
    private static let userKeys: Set<String> = ["name", "token_hash", "token", "publish", "subscribe", "limits", "admin"]
    private static let ruleKeys: Set<String> = ["allow", "deny"]

    /// The users of `auth.users`, or nil when `auth` is absent (or null).
    /// - Parameter limits: every user's limits (`user_limits`), which its own `limits` override.
    func authUsers(limits: UserLimits = UserLimits()) throws(ConfigProblem) -> [AuthUser]? {
        let key = ConfigCodingKey(.auth)
        guard container.contains(key), (try? container.decodeNil(forKey: key)) != true else { return nil }
        guard let section = try? container.nestedContainer(keyedBy: ConfigCodingKey.self, forKey: key) else {
            throw .badValue(.auth, found: "not an object")
        }
        try Self.rejectUnknown(in: section, allowed: ["users"], at: "auth")
        let usersKey = ConfigCodingKey(stringValue: "users")
        guard section.contains(usersKey) else { return [] }
        guard var list = try? section.nestedUnkeyedContainer(forKey: usersKey) else {
            throw Self.problem("auth.users", "expected an array of users")
        }
        var users: [AuthUser] = []
        while !list.isAtEnd {
            let place = "auth.users[\(users.count)]"
            guard let object = try? list.nestedContainer(keyedBy: ConfigCodingKey.self) else {
                throw Self.problem(place, "expected an object { name, token_hash or token, publish?, subscribe?, limits? }")
            }
            let user = try Self.user(object, at: place, limits: limits)
            if users.contains(where: { $0.name == user.name }) {
                throw Self.problem(place + ".name", "\"\(user.name)\" is given twice")
            }
            users.append(user)
        }
        return users
    }

    private static func user(_ object: KeyedDecodingContainer<ConfigCodingKey>, at place: String,
                             limits: UserLimits) throws(ConfigProblem) -> AuthUser {
        try rejectUnknown(in: object, allowed: userKeys, at: place)
        guard let name = try? object.decode(String.self, forKey: ConfigCodingKey(stringValue: "name")),
              !name.isEmpty, name.utf8.count <= 255 else {
            throw problem(place + ".name", "expected a non-empty string of at most 255 bytes")
        }
        let hashKey = ConfigCodingKey(stringValue: "token_hash")
        let plainKey = ConfigCodingKey(stringValue: "token")
        let credential: TokenCredential
        let isPlain: Bool
        switch (object.contains(hashKey), object.contains(plainKey)) {
        case (true, false):
            guard let text = try? object.decode(String.self, forKey: hashKey),
                  let parsed = TokenCredential(hash: text) else {
                throw problem(place + ".token_hash",
                              "expected \"pbkdf2-sha256:<iterations>:<salt hex>:<64 hex digits>\" as printed by "
                                + "heraldd --hash-token <token> (or the older \"sha256:<salt hex>:<64 hex digits>\")")
            }
            credential = parsed
            isPlain = false
        case (false, true):
            guard let text = try? object.decode(String.self, forKey: plainKey), !text.isEmpty,
                  text.utf8.count <= TokenCredential.maxTokenBytes else {
                throw problem(place + ".token", "expected a non-empty string of at most \(TokenCredential.maxTokenBytes) bytes")
            }
            credential = TokenCredential(plainToken: Array(text.utf8))
            isPlain = true
        default:
            throw problem(place, "give exactly one of token_hash and token")
        }
        var user = AuthUser(name: name, credential: credential, isPlainToken: isPlain,
                            publish: try rule(in: object, "publish", at: place),
                            subscribe: try rule(in: object, "subscribe", at: place),
                            limits: try userLimits(in: object, "limits", at: place, over: limits) ?? limits)
        let adminKey = ConfigCodingKey(stringValue: "admin")
        if object.contains(adminKey) {
            guard let admin = try? object.decode(Bool.self, forKey: adminKey) else {
                throw problem(place + ".admin", "expected true or false")
            }
            user.isAdmin = admin
        }
        return user
    }

    private static func rule(in object: KeyedDecodingContainer<ConfigCodingKey>, _ name: String,
                             at place: String) throws(ConfigProblem) -> ChannelRule {
        let key = ConfigCodingKey(stringValue: name)
        guard object.contains(key) else { return ChannelRule() }
        let here = place + "." + name
        guard let section = try? object.nestedContainer(keyedBy: ConfigCodingKey.self, forKey: key) else {
            throw problem(here, "expected an object { allow?: [patterns], deny?: [patterns] }")
        }
        try rejectUnknown(in: section, allowed: ruleKeys, at: here)
        let allowKey = ConfigCodingKey(stringValue: "allow")
        let allow = section.contains(allowKey) ? try patterns(in: section, "allow", at: here) : nil
        let deny = try patterns(in: section, "deny", at: here) ?? []
        return ChannelRule(allow: allow, deny: deny)
    }

    private static func patterns(in section: KeyedDecodingContainer<ConfigCodingKey>, _ name: String,
                                 at place: String) throws(ConfigProblem) -> [[UInt8]]? {
        let key = ConfigCodingKey(stringValue: name)
        guard section.contains(key) else { return nil }
        guard let texts = try? section.decode([String].self, forKey: key) else {
            throw problem(place + "." + name, "expected an array of channel patterns")
        }
        var result: [[UInt8]] = []
        for (index, text) in texts.enumerated() {
            let bytes = Array(text.utf8)
            do throws(HeraldError) {
                _ = try ChannelName.validatePattern(bytes)
            } catch {
                throw problem(place + "." + name + "[\(index)]", error.message)
            }
            result.append(bytes)
        }
        return result
    }

    static func rejectUnknown(in object: KeyedDecodingContainer<ConfigCodingKey>, allowed: Set<String>,
                                      at place: String) throws(ConfigProblem) {
        let unknown = object.allKeys.map(\.stringValue).filter { !allowed.contains($0) }.sorted()
        guard !unknown.isEmpty else { return }
        throw .unknownKeys(unknown.map { place + "." + $0 })
    }

    static func problem(_ place: String, _ message: String) -> ConfigProblem {
        ConfigProblem(description: "bad value for \"\(place)\": \(message)")
    }
}

extension Config {
    /// Names of users whose token is in the file in plain text (for the start-up warning).
    public var plainTokenUsers: [String] { authUsers.filter(\.isPlainToken).map(\.name) }

    /// Names of users whose `token_hash` is the old fast `sha256:` form (warned about at
    /// start and on every reload, like plain tokens).
    public var fastHashUsers: [String] {
        authUsers.filter { !$0.isPlainToken && !$0.credential.isSlow }.map(\.name)
    }

    /// PBKDF2 iterations `--hash-token` uses. Measured on the 2-core development machine:
    /// ~100 ms of CPU per verification (docs/operations.md); each wrong `hello` costs that per
    /// pbkdf2 user, on the thread pool, and a verified token is cached for the process's life.
    public static let hashIterations = 100_000

    /// A `token_hash` line for `token`: PBKDF2-HMAC-SHA256 with a fresh random 16-byte salt
    /// (`--hash-token`).
    /// - Parameters:
    ///   - token: the token an operator will hand to a client.
    ///   - iterations: the PBKDF2 iteration count.
    /// - Returns: `pbkdf2-sha256:<iterations>:<salt hex>:<key hex>`, ready for `token_hash`,
    ///   or nil when OpenSSL failed.
    public static func hashToken(_ token: String, iterations: Int = hashIterations) -> String? {
        var generator = SystemRandomNumberGenerator()
        let salt = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        guard let key = PBKDF2.sha256(token: Array(token.utf8), salt: salt, iterations: iterations) else { return nil }
        return TokenCredential(scheme: .pbkdf2SHA256(iterations: iterations), salt: salt, digest: key).line
    }
}

extension Server {
    /// Logs a warning per user whose token sits in the config in plain text.
    func warnAboutPlainTokens(_ config: Config) {
        for name in config.plainTokenUsers {
            logger.warn("plain token in config; use token_hash (heraldd --hash-token)", ["user": name])
        }
    }
}
