"""Sentence templates of the redaction benchmark (``secrets_data.py``): one set per split, written separately.

``{s}`` is the secret; in URL templates ``{u}`` is a user name and ``{h}`` a host. Look-alike templates use the
fields of ``secrets_data.lookalike_values``. The holdout templates were written before the detector was tuned
and differ in wording, register and layout (terse chat, Markdown code, config files, other languages' phrasing).
"""

from __future__ import annotations

POSITIVE: dict[str, dict[str, list[str]]] = {
    "tune": {
        "aws-access-key": [
            "here's my key {s} can you check why boto fails",
            "I set AWS_ACCESS_KEY_ID={s} but the upload still says access denied",
            "is {s} an access key id or a session one?",
            "the CI log printed {s}, should I rotate it?",
        ],
        "aws-secret-key": [
            "aws secret access key is {s}, region eu-west-1",
            "export AWS_SECRET_ACCESS_KEY={s}",
            'my aws config has aws_secret_access_key = "{s}" and it still fails',
            "AWS creds for the backup job: secret {s}",
        ],
        "github-token": [
            "my github token is {s}, why do I get 401 on push",
            "git clone https://{s}@github.com/acme/api.git fails",
            "GH_TOKEN={s} is set in the workflow",
            "I pasted {s} into the settings page, is that right?",
        ],
        "gitlab-token": [
            "gitlab personal access token: {s}",
            "the runner uses {s} to pull the registry",
            "curl --header 'PRIVATE-TOKEN: {s}' fails with 403",
        ],
        "slack-token": [
            "slack bot token {s} returns not_authed",
            "the bot uses {s} to post, can you see the problem?",
            "SLACK_BOT_TOKEN={s}",
        ],
        "stripe-key": [
            "stripe keeps rejecting {s} in production",
            "the live key is {s}, test mode works",
            "STRIPE_SECRET_KEY={s} is in the .env file",
        ],
        "openai-key": [
            "my openai key {s} hits the rate limit",
            "OPENAI_API_KEY={s} python app.py gives 401",
            "can you check this key: {s}",
        ],
        "google-api-key": [
            "maps api key {s} says referer not allowed",
            'the firebase config has apiKey: "{s}"',
            "I use {s} for the geocoding calls",
        ],
        "jwt": [
            "the API returns 401 for this token: {s}",
            "Authorization: Bearer {s}",
            "can you decode {s} and tell me when it expires?",
        ],
        "private-key": [
            "here is the deploy key, the server rejects it:\n{s}\nwhat is wrong?",
            "{s}",
            "ssh says invalid format for\n{s}",
        ],
        "url-password": [
            "the connection string is postgres://{u}:{s}@{h}:5432/app",
            "I use https://{u}:{s}@{h}/repo.git to clone",
            "redis://{u}:{s}@{h}:6379/0 times out",
        ],
        "password": [
            "my password is {s}",
            "wifi password: {s}",
            "the password for the staging db is {s}",
            'DB_PASSWORD="{s}" in docker compose',
            "password={s}",
            "I changed the router password to {s} yesterday",
        ],
        "card-number": [
            "my card number is {s}, exp 04/27, why was it declined?",
            "charge it to {s} please",
            "the checkout form rejects {s}",
            "Card: {s} CVV on the back",
        ],
        "iban": [
            "send the refund to IBAN {s}",
            "my bank account is {s}, the transfer never arrived",
            "IBAN: {s} BIC: DEUTDEFF",
            "can you check if {s} is a valid iban?",
        ],
        "high-entropy": [
            "the api token for our internal service is {s}",
            "webhook secret: {s}",
            "use this access key {s} for the staging bucket",
            "the session cookie is {s}",
        ],
    },
    "holdout": {
        "aws-access-key": [
            "boto3 says InvalidClientTokenId with {s} :(",
            "```\n[default]\naws_access_key_id = {s}\n```",
            "pls rotate {s} asap, it leaked in a PR",
            "the IAM user's id is {s}",
        ],
        "aws-secret-key": [
            "```\n[default]\naws_secret_access_key = {s}\n```",
            "secret for that AWS user -> {s}",
            "AWS_SECRET_ACCESS_KEY: {s}",
            "the aws secret is\n{s}",
        ],
        "github-token": [
            "token={s} && gh auth login --with-token",
            "{s} <- the PAT, expires in 30 days",
            "Bearer {s} works with curl but not with octokit",
            "fine, using {s} for the bot account",
        ],
        "gitlab-token": [
            "GITLAB_TOKEN: {s}",
            "ok the glab cli wants {s}",
            "pushed with {s} and got 401",
        ],
        "slack-token": [
            "{s}",
            "webhook/token for #alerts: {s}",
            "why does chat.postMessage fail with {s}?",
        ],
        "stripe-key": [
            "Stripe::StripeError with api_key {s}",
            "{s} (the restricted one)",
            "swapped test for live: {s}",
        ],
        "openai-key": [
            'client = OpenAI(api_key="{s}")',
            "{s} — is that the project key?",
            "the langchain demo wants {s} in the env",
        ],
        "google-api-key": [
            "key={s}",
            "YouTube Data API rejects {s} with quotaExceeded",
            "const API = '{s}';",
        ],
        "jwt": [
            "id_token={s}",
            "jwt.io shows an invalid signature for {s}",
            "{s}",
        ],
        "private-key": [
            "```\n{s}\n```",
            "found this in the repo, is it live?\n\n{s}\n\nthx",
            "id_rsa contents: {s}",
        ],
        "url-password": [
            "DATABASE_URL=mysql://{u}:{s}@{h}/shop",
            "amqp://{u}:{s}@{h}:5672 refused the connection",
            "mongo uri mongodb://{u}:{s}@{h}:27017/admin",
        ],
        "password": [
            "pw: {s}",
            "New password is {s} (don't share)",
            "the admin passcode = {s}",
            "Passwort: {s}",
            "login is ana@example.com / password {s}",
            "'password': '{s}',",
        ],
        "card-number": [
            "{s} 09/28 123",
            "visa/mc ending... actually full number is {s}",
            "can u pay with {s}",
            "paid with card {s} and it got charged twice",
        ],
        "iban": [
            "Kontonummer (IBAN) {s}",
            "{s} - that's the account for the rent",
            "pls wire to {s} by friday",
            "beneficiary iban={s}",
        ],
        "high-entropy": [
            "X-Api-Key: {s}",
            "client_secret = {s}",
            "here's the signing secret {s}",
            "our internal API token is {s} btw",
        ],
    },
}

NEGATIVE: dict[str, dict[str, list[str]]] = {
    "tune": {
        "git-sha": [
            "the bug came in with commit {sha40}, can you revert it?",
            "git cherry-pick {sha7} onto release",
            "HEAD is at {sha40} after the rebase",
            "the token refresh fix landed in {sha7}",
        ],
        "uuid": [
            "request id {uuid} failed with 500",
            "the user's uuid is {uuid}",
            "session {uuid} timed out after an hour",
        ],
        "data-uri": [
            "the logo is ![logo](data:image/png;base64,{png})",
            '<img src="data:image/png;base64,{png}"> does not render',
        ],
        "hash": [
            "sha256sum says {sha64}  ubuntu.iso, does it match?",
            "the md5 of the file is {md5}",
            "docker pulled image sha256:{sha64}",
            'the etag header is "{md5}"',
        ],
        "code": [
            'password = os.environ["DB_PASSWORD"] returns None',
            'def {ident}(user_id: int) -> dict:\n    return cache.get(f"user:{{user_id}}")',
            "const apiKey = process.env.OPENAI_API_KEY; is undefined in the browser",
            'token = request.headers.get("Authorization", "").removeprefix("Bearer ")',
            "base64.b64encode(b'hello world') gives aGVsbG8gd29ybGQ=",
        ],
        "long-word": [
            "is {word} really a word?",
            "rename {ident} to something shorter",
            "the class {ident} is too long",
        ],
        "url": [
            "watch https://www.youtube.com/watch?v={yt} it explains it",
            "the doc is at https://docs.google.com/document/d/{gdoc}/edit",
            "see https://github.com/acme/api/pull/{num}#issuecomment-12345",
            "https://example.com/search?q=redis+timeout&page={num}",
        ],
        "phone": [
            "call me at {phone}",
            "the office number is {phone_int}",
        ],
        "order-number": [
            "order #{order} has not shipped",
            "UPS tracking {ups} says delivered",
            "tracking number {usps}",
        ],
        "date-version": [
            "upgraded to {version} on {date}",
            "the meeting is on {date} at 14:30",
            "python {version} breaks the build",
        ],
        "luhn-invalid": [
            "is {luhn_bad} a valid card number?",
            "my old card {luhn_bad} was cancelled",
        ],
        "isbn": [
            "the book's ISBN is {isbn}",
            "ISBN {isbn_compact} is out of print",
        ],
        "password-talk": [
            "I forgot my password again",
            "the password is too short, it needs {num} characters",
            "what's the wifi password?",
            "my password is not working",
            "the password reset link expired",
        ],
        "placeholder": [
            "my key is [secret:{kind}] and boto fails",
            "password: [secret:password]",
            "I pasted [secret:{kind}] earlier",
        ],
        "random-ids": [
            "stripe says charge {stripe_obj} succeeded but no email",
            'the integrity field is "{sri}" in package-lock.json',
            "mongo document {objectid} is missing the email field",
            "pod {pod} keeps crashing with OOMKilled",
            "send the btc to {btc}, my wallet address",
            "the photo {img} is blurry",
            "short link {short} is broken",
            "the payload base64 is {b64text}",
        ],
        "context-lookalike": [
            "the cache key is {md5} for that query",
            "idempotency key {uuid} was reused",
            "the api returned request id {stripe_obj}",
            "the token expired on {date}, how do I renew it?",
            "set the session timeout to {num} minutes",
            "api version {version} deprecates the old key format",
        ],
        "ordinary": [
            "can you summarise the meeting notes from {date}?",
            "I moved to Lisbon last spring and love it",
            "the server at {ip} is slow today",
            "what should I cook with {num} eggs and spinach?",
            "remind me to call mum on Sunday",
        ],
    },
    "holdout": {
        "git-sha": [
            "`git reset --hard {sha7}` lost my changes",
            "bisect says the first bad commit is {sha40}",
            "Merge {sha40} into main fixed the auth key rotation",
            "rev {sha7} vs {sha7}?",
        ],
        "uuid": [
            "{uuid}",
            "trace_id={uuid} span failed",
            "api key id {uuid} shows up in the audit log",
        ],
        "data-uri": [
            "background: url(data:image/png;base64,{png});",
            "copying the favicon: data:image/png;base64,{png}",
        ],
        "hash": [
            "{sha64}  release.tar.gz",
            "Digest: sha256:{sha64}",
            "checksum {md5} mismatch",
            "pip hash --sha256 gives {sha64}",
        ],
        "code": [
            "```python\nsecret_key = settings.SECRET_KEY\nassert secret_key\n```",
            "```js\nfunction {ident}(a, b) {{ return a + b; }}\n```",
            "api_key: ${{API_KEY}} in the yaml is not substituted",
            "`export TOKEN=$(gh auth token)` works",
            "password = getpass.getpass() hangs in docker",
        ],
        "long-word": [
            "{word}!",
            "typo in {ident}",
            "{ident} returns null",
        ],
        "url": [
            "https://youtu.be/{yt}",
            "link: https://drive.google.com/file/d/{gdoc}/view?usp=sharing",
            "https://stackoverflow.com/questions/{order}/redis-timeout",
            "docs at https://docs.python.org/3/library/secrets.html#secrets.token_hex",
        ],
        "phone": [
            "{phone_int} (mobile)",
            "txt me {phone}",
        ],
        "order-number": [
            "Order {order} - refund pending",
            "{ups}",
            "pkg {usps} stuck in customs",
        ],
        "date-version": [
            "{date}T09:15:00Z is when it broke",
            "bump to v{version}",
            "node {version}, npm {version}",
        ],
        "luhn-invalid": [
            "{luhn_bad}",
            "test number {luhn_bad} fails the checkout",
        ],
        "isbn": [
            "{isbn}",
            "ISBN-13: {isbn_compact}",
        ],
        "password-talk": [
            "password manager recommendations?",
            "pw reset doesn't send the email",
            "Password must contain a digit",
            "the password was changed yesterday",
            "what password should I use for the guest network",
        ],
        "placeholder": [
            "[secret:{kind}]",
            "ok so [secret:{kind}] is rotated now",
            "pw: [secret:password]",
        ],
        "random-ids": [
            "{eth} is my metamask address",
            "payment {stripe_obj} is stuck in requires_action",
            '<script integrity="{sri}" crossorigin>',
            "docker rm {container}",
            "bc address {bech32}",
            "ASIN {asin} is cheaper on .de",
            "https://www.youtube.com/playlist?list={playlist}",
            "firebase push id {firebase} missing",
        ],
        "context-lookalike": [
            "secret santa draw is on {date}!",
            "primary key {objectid} not found",
            "key rotation runs every {num} days",
            "auth failed for request {uuid}",
            "token count was {order} last month",
            "the api key was rotated in commit {sha40}",
        ],
        "ordinary": [
            "lol ok",
            "which is better for a 3 day trip, Porto or Seville?",
            "ping {ip} works but ssh hangs",
            "I need {num} more minutes",
            "Translate 'good morning' to Japanese",
        ],
    },
}
