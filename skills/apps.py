from django.apps import AppConfig


class SkillsConfig(AppConfig):
    verbose_name = "Skills"  # the admin's breadcrumbs and app pages
    name = "skills"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from skills.embedded_spaces import register_tables

        register_tables()

        # A skill's graph node (and its depends_on edges) is written with the skill: through
        # any door, the graph asks for the role that manages skills (rag.graph.node_types).
        from rag.graph.services import node_type_register
        from skills.roles import MANAGE_SKILLS
        from skills.services.indexing import SKILL_ENTITY_TYPE

        node_type_register(SKILL_ENTITY_TYPE, MANAGE_SKILLS)
