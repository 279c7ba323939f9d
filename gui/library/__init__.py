"""The Library place: saved plans; reopen, rename, duplicate, delete with undo, compare, import and
export."""
