"""Agent Skills (the agentskills.io format): folders with a SKILL.md found in the project and the user's
folders (`discovery`), read leniently (`parse`), listed in the system prompt within a budget (`catalog`),
and loaded into the conversation by the model's `load_skill` or the person's `$NAME` (`book`).

Skills guide the model; they never change what it may do: `allowed-tools` is shown, never obeyed.
"""

from loopagent.skills.book import SkillBook
from loopagent.skills.catalog import Catalog, build_catalog
from loopagent.skills.discovery import Found, available_skills, discover
from loopagent.skills.parse import Invalid, Skill

__all__ = ["Catalog", "Found", "Invalid", "Skill", "SkillBook", "available_skills", "build_catalog", "discover"]
