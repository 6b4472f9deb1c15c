-- Core HR schema. Dates are ISO 8601 text (YYYY-MM-DD) so they sort and
-- compare correctly as strings. Ids and names compare case-insensitively.
-- Foreign keys that close a cycle (department head, team manager, employee
-- manager) are deferred so a whole organisation can be inserted in one
-- transaction.

CREATE TABLE departments (
    id          TEXT NOT NULL PRIMARY KEY COLLATE NOCASE,
    name        TEXT NOT NULL UNIQUE COLLATE NOCASE,
    description TEXT NOT NULL,
    head_id     TEXT REFERENCES employees (id) DEFERRABLE INITIALLY DEFERRED
);

CREATE TABLE teams (
    id            TEXT NOT NULL PRIMARY KEY COLLATE NOCASE,
    name          TEXT NOT NULL UNIQUE COLLATE NOCASE,
    department_id TEXT NOT NULL REFERENCES departments (id),
    description   TEXT NOT NULL,
    manager_id    TEXT REFERENCES employees (id) DEFERRABLE INITIALLY DEFERRED
);

CREATE TABLE locations (
    id      INTEGER NOT NULL PRIMARY KEY,
    city    TEXT NOT NULL,
    region  TEXT,
    country TEXT NOT NULL,
    UNIQUE (city, country)
);

CREATE TABLE roles (
    id            INTEGER NOT NULL PRIMARY KEY,
    title         TEXT NOT NULL UNIQUE COLLATE NOCASE,
    track         TEXT NOT NULL
        CHECK (track IN ('individual-contributor', 'manager', 'executive')),
    department_id TEXT NOT NULL REFERENCES departments (id) DEFERRABLE INITIALLY DEFERRED
);

-- Annual base salary band per role and level.
CREATE TABLE compensation_bands (
    role_id    INTEGER NOT NULL REFERENCES roles (id),
    level      TEXT NOT NULL
        CHECK (level IN ('junior', 'mid', 'senior', 'staff', 'principal', 'director', 'executive')),
    currency   TEXT NOT NULL DEFAULT 'USD',
    min_salary INTEGER NOT NULL,
    mid_salary INTEGER NOT NULL,
    max_salary INTEGER NOT NULL,
    PRIMARY KEY (role_id, level),
    CHECK (min_salary <= mid_salary AND mid_salary <= max_salary)
);

CREATE TABLE employees (
    id                 TEXT NOT NULL PRIMARY KEY COLLATE NOCASE,
    first_name         TEXT NOT NULL,
    last_name          TEXT NOT NULL,
    email              TEXT NOT NULL UNIQUE COLLATE NOCASE,
    phone              TEXT NOT NULL,
    role_id            INTEGER NOT NULL REFERENCES roles (id),
    level              TEXT NOT NULL,
    department_id      TEXT NOT NULL REFERENCES departments (id),
    team_id            TEXT REFERENCES teams (id) DEFERRABLE INITIALLY DEFERRED,
    manager_id         TEXT REFERENCES employees (id) DEFERRABLE INITIALLY DEFERRED,
    location_id        INTEGER NOT NULL REFERENCES locations (id),
    employment_type    TEXT NOT NULL
        CHECK (employment_type IN ('full-time', 'part-time', 'contractor')),
    office_type        TEXT NOT NULL CHECK (office_type IN ('remote', 'hybrid', 'on-site')),
    start_date         TEXT NOT NULL,
    status             TEXT NOT NULL CHECK (status IN ('active', 'terminated')),
    termination_date   TEXT,
    termination_reason TEXT CHECK (termination_reason IN ('voluntary', 'involuntary')),
    -- Annual base salary (full-time equivalent) in the band's currency.
    salary             INTEGER NOT NULL,
    FOREIGN KEY (role_id, level) REFERENCES compensation_bands (role_id, level),
    CHECK ((status = 'terminated') = (termination_date IS NOT NULL))
);

CREATE TABLE skills (
    id       INTEGER NOT NULL PRIMARY KEY,
    name     TEXT NOT NULL UNIQUE COLLATE NOCASE,
    category TEXT NOT NULL
);

CREATE TABLE employee_skills (
    employee_id TEXT NOT NULL REFERENCES employees (id) ON DELETE CASCADE,
    skill_id    INTEGER NOT NULL REFERENCES skills (id),
    -- 1 beginner, 2 intermediate, 3 advanced, 4 expert.
    proficiency INTEGER NOT NULL CHECK (proficiency BETWEEN 1 AND 4),
    PRIMARY KEY (employee_id, skill_id)
);

CREATE TABLE employment_history (
    id            INTEGER NOT NULL PRIMARY KEY,
    employee_id   TEXT NOT NULL REFERENCES employees (id) ON DELETE CASCADE,
    company       TEXT NOT NULL,
    title         TEXT NOT NULL,
    level         TEXT,
    department_id TEXT REFERENCES departments (id),
    event         TEXT NOT NULL CHECK (event IN ('previous-employer', 'hired', 'promoted')),
    start_date    TEXT NOT NULL,
    end_date      TEXT
);

CREATE TABLE leave_balances (
    employee_id   TEXT NOT NULL REFERENCES employees (id) ON DELETE CASCADE,
    year          INTEGER NOT NULL,
    leave_type    TEXT NOT NULL
        CHECK (leave_type IN ('annual', 'sick', 'parental', 'bereavement', 'unpaid')),
    entitled_days REAL NOT NULL CHECK (entitled_days >= 0),
    used_days     REAL NOT NULL CHECK (used_days >= 0),
    pending_days  REAL NOT NULL CHECK (pending_days >= 0),
    PRIMARY KEY (employee_id, year, leave_type)
);

-- Facts about the database itself (seed version, ...).
CREATE TABLE directory_meta (
    key   TEXT NOT NULL PRIMARY KEY,
    value TEXT NOT NULL
);
