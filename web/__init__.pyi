"""The static site: a store or a snapshot rendered as plain files (``coevo site``)."""

from .site import SiteError, SiteReport, render_site, render_snapshot_site, repo_page, web_url

__all__ = ["SiteError", "SiteReport", "render_site", "render_snapshot_site", "repo_page", "web_url"]
