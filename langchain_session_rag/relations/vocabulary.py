"""Names and words the extractors share: entity keys, the technology gazetteer, predicates and entity types.

An entity's **key** is its name folded for comparison: lower case, one space between words, a leading article or
possessive left out ("the analytics service" and "our Analytics Service" are ``analytics service``), and a known
technology under its canonical spelling ("postgres", "Postgres", "PostgreSQL" are all ``postgresql``).
"""

from __future__ import annotations

import functools
import re
from typing import Final, Literal

Predicate = Literal[
    "uses", "runs_on", "caused_by", "fixed_by", "decided", "lives_in", "works_at", "owns", "named", "birthday"
]
PREDICATES: Final[tuple[Predicate, ...]] = (
    "uses", "runs_on", "caused_by", "fixed_by", "decided", "lives_in", "works_at", "owns", "named", "birthday"
)  # fmt: skip
"""The relations the extractors produce (a switch, a move or a replacement is the new relation closing the old)."""
FUNCTIONAL: Final = frozenset({"runs_on", "lives_in", "works_at", "named", "birthday"})
"""Predicates with one value at a time: a later statement with another object closes the earlier one."""
PHRASES: Final[dict[str, str]] = {
    "uses": "uses", "runs_on": "runs on", "caused_by": "caused by", "fixed_by": "fixed by", "decided": "decided",
    "lives_in": "lives in", "works_at": "works at", "owns": "owns", "named": "named", "birthday": "birthday",
}  # fmt: skip
"""How a predicate reads in a rendered relation."""

EntityType = Literal["person", "project", "technology", "place", "organisation", "pet", "date", "thing"]
ENTITY_TYPES: Final[tuple[EntityType, ...]] = (
    "person", "project", "technology", "place", "organisation", "pet", "date", "thing"
)  # fmt: skip
SPEAKER: Final = "user"
"""The subject of a user's first-person statement ("I live in Lisbon"), when the speaker has no name."""

_TECH = (
    "Python", "Go|golang", "Rust", "Java", "Kotlin", "Scala", "TypeScript|ts", "JavaScript|js", "Ruby",
    "Rails|Ruby on Rails", "PHP", "Elixir", "Erlang", "Haskell", "C#|csharp", "C++|cpp", "Swift", "Dart", "Flutter",
    "Node.js|node|nodejs",
    "Deno", "Bun", "Django", "Flask", "FastAPI", "Spring|Spring Boot", "Laravel", "Express", "NestJS", "Next.js|nextjs",
    "Nuxt", "React", "React Native", "Vue|Vue.js|vuejs", "Angular", "Svelte|SvelteKit", "Tailwind|Tailwind CSS",
    "PostgreSQL|postgres|psql|pg", "MySQL", "MariaDB", "SQLite", "MongoDB|mongo", "Redis", "Valkey", "Memcached",
    "Cassandra", "ScyllaDB", "DynamoDB", "ClickHouse", "Snowflake", "BigQuery", "Redshift", "DuckDB", "Elasticsearch",
    "OpenSearch", "Solr", "Kafka|Apache Kafka", "RabbitMQ", "NATS", "SQS", "Pub/Sub", "Celery", "Airflow", "dbt",
    "Spark|Apache Spark", "Flink", "Pandas", "NumPy", "PyTorch|torch", "TensorFlow", "scikit-learn|sklearn",
    "Docker", "Podman", "Kubernetes|k8s|kube", "Helm", "Terraform", "OpenTofu", "Pulumi", "Ansible", "Chef", "Puppet",
    "Nomad", "Consul", "Vault", "Nginx", "Caddy", "Traefik", "HAProxy", "Envoy", "Istio", "Linkerd",
    "AWS|Amazon Web Services", "EC2", "ECS", "EKS", "Lambda|AWS Lambda", "S3", "RDS", "Aurora", "CloudFront",
    "GCP|Google Cloud", "GKE", "Cloud Run", "Azure", "AKS", "Heroku", "Fly.io|fly", "Vercel", "Netlify", "Render",
    "Railway", "DigitalOcean", "Hetzner", "Linode", "OVH", "Cloudflare", "Cloudflare Workers", "Supabase", "Firebase",
    "Jenkins", "GitHub Actions", "GitLab CI", "CircleCI", "Travis CI", "Buildkite", "Argo CD|ArgoCD", "Flux",
    "GitHub", "GitLab", "Bitbucket", "Jira", "Linear", "Sentry", "Datadog", "Grafana", "Prometheus", "Loki",
    "New Relic", "Honeycomb", "PagerDuty", "OpenTelemetry", "Splunk", "Kibana", "Logstash", "Stripe", "Twilio",
    "SendGrid", "Auth0", "Okta", "Keycloak", "GraphQL", "gRPC", "REST", "OpenAPI", "Webpack", "Vite", "Babel",
    "ESLint", "Prettier", "Jest", "Pytest", "Cypress", "Playwright", "Selenium", "Poetry", "uv", "pip", "npm", "pnpm",
    "Yarn", "Bazel", "Gradle", "Maven", "Make", "CMake", "LangChain", "LangGraph", "Chroma", "Pinecone", "Qdrant",
    "Weaviate", "pgvector", "Ollama", "OpenAI", "Claude", "Llama", "Mistral", "Hugging Face", "Pillow", "Pydantic",
    "SQLAlchemy", "Alembic", "Prisma", "Hibernate", "Linux", "Ubuntu", "Debian", "Alpine", "Windows", "macOS",
    "iOS", "Android", "Slack", "Notion", "Figma", "VS Code|vscode", "Vim|Neovim", "Emacs", "IntelliJ", "Excel",
)  # fmt: skip
TECHNOLOGIES: Final[dict[str, str]] = {
    alias.lower(): group.split("|")[0] for group in _TECH for alias in group.split("|")
}
"""Every spelling (lower case) of a known technology → its canonical name."""
PLATFORMS: Final = frozenset(
    t.lower() for t in (
        "AWS", "EC2", "ECS", "EKS", "Lambda", "GCP", "GKE", "Cloud Run", "Azure", "AKS", "Heroku", "Fly.io", "Vercel",
        "Netlify", "Render", "Railway", "DigitalOcean", "Hetzner", "Linode", "OVH", "Cloudflare", "Cloudflare Workers",
        "Kubernetes", "Nomad", "Docker", "Linux", "Ubuntu", "Debian", "Alpine", "Windows", "macOS", "iOS", "Android",
    )
)  # fmt: skip
"""Canonical technologies (lower case) something runs on rather than uses (a move to one is ``runs_on``)."""
# Words too common to be a technology unless written cased ("Go", not "go").
AMBIGUOUS: Final = frozenset({"go", "ts", "js", "pg", "node", "fly", "make", "flux", "render", "railway", "express",
                               "spring", "chef", "puppet", "vault", "linear", "swift", "dart", "rest", "lambda",
                               "kube", "torch", "pip", "uv", "claude", "mistral", "llama", "excel", "slack", "notion",
                               "consul", "bun", "vite", "babel", "jest", "ovh", "solr", "nats", "loki",
                               "aurora"})  # fmt: skip

_ARTICLES = re.compile(
    r"^(?:(?:the|a|an|our|my|your|his|her|their|its|this|that|these|those|some|new|old)\s+)+", re.IGNORECASE
)
_SPACES = re.compile(r"\s+")
_EDGE = re.compile(r"^[\s\"'`“”‘’(\[]+|[\s\"'`“”‘’)\],.;:!?]+$")


def clean_name(text: str) -> str:
    """A name as it should be shown: edges trimmed, one space between words, a leading article left out."""
    name = _SPACES.sub(" ", _EDGE.sub("", text)).strip()
    name = _ARTICLES.sub("", name)
    return _EDGE.sub("", name)


def canonical(text: str) -> str:
    """A known technology's canonical name, else the cleaned name."""
    name = clean_name(text)
    return TECHNOLOGIES.get(name.lower(), name)


@functools.lru_cache(maxsize=65_536)
def key_of(text: str) -> str:
    """The comparison key of a name (see the module docstring)."""
    return canonical(text).lower()


def technology(word: str, *, cased: bool) -> str | None:
    """The canonical technology ``word`` names, if any (an ambiguous word like "go" only when written cased)."""
    low = word.lower()
    if low not in TECHNOLOGIES:
        return None
    if low in AMBIGUOUS and not cased:
        return None
    return TECHNOLOGIES[low]
