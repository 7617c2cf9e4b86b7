"""Write chunkbench's bundled sample corpus and check the sample questions.

The sample corpus lives inside the package, in chunkbench_core/datasets/sample/corpus/, and its
questions in the top-level questions/sample/sample.json (a built package carries a copy), so that an
installed chunkbench runs on them by default.

The corpus belongs to a fictional company, Corvane Systems, that sells an expense
management product called Corvane Ledger (plus one short Persian document from a second
fictional company, Kavan Dadeh). All text was written for chunkbench.

Usage:
    python scripts/make_sample_corpus.py            # (re)write the sample corpus
    python scripts/make_sample_corpus.py --check    # verify the sample questions against the corpus
    python scripts/make_sample_corpus.py --all      # write, then check

Generation is deterministic: document metadata and creation dates are fixed, and the
DOCX zip members get a fixed timestamp, so regenerating gives byte-identical files for
the same library versions (python-docx 1.2, fpdf2 2.8).
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
import textwrap
import zipfile
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SAMPLE_DIR = REPO / "chunkbench_core" / "datasets" / "sample"
CORPUS_DIR = SAMPLE_DIR / "corpus"
QUESTIONS_FILE = REPO / "questions" / "sample" / "sample.json"  # shipped in the package by setup.py

FIXED_DATE = datetime(2024, 5, 20, 9, 0, 0, tzinfo=timezone.utc)
ZIP_DATE = (2024, 5, 20, 9, 0, 0)

# --------------------------------------------------------------------------------------
# Content. Blocks are tuples:
#   ("title", text) ("h1", text) ("h2", text) ("p", text)
#   ("table", [header_row, row, ...]) ("qa", question, answer)
#   ("ul", [item, ...])  (markdown / text only)
# --------------------------------------------------------------------------------------

HANDBOOK: list[tuple] = [
    ("title", "Corvane Systems Employee Handbook"),
    ("p", "Version 7, issued 3 January 2024. Maintained by People Operations."),
    ("h1", "About This Handbook"),
    (
        "p",
        "This handbook explains how we work at Corvane Systems: the hours we keep, the time "
        "off you are entitled to, how pay and expenses work, and what we expect from each "
        "other. It applies to all permanent and fixed-term employees in our Bristol, Porto "
        "and Kraków offices. Contractors should refer to the terms in their own agreements, "
        "although many of the practical sections will still be useful to them.",
    ),
    (
        "p",
        "Corvane Systems was founded in 2011 by Ines Marlowe and Tobias Renk, who met while "
        "building payment software for a regional building society. Today we employ around "
        "340 people, and our main product, Corvane Ledger, is used by more than 4,800 "
        "organisations to manage expenses, receipts and supplier invoices.",
    ),
    (
        "p",
        "Where local law in Portugal or Poland gives you a more generous entitlement than "
        "this handbook, the local entitlement applies. Country supplements are published on "
        "the Harbour intranet and are reviewed every January.",
    ),
    ("h1", "Working Hours and Location"),
    ("h2", "Core hours"),
    (
        "p",
        "The standard working week is 37.5 hours, usually worked Monday to Friday. Core hours "
        "are 10:00 to 15:30 local time, and we ask everyone to be available for meetings "
        "during that window. Outside core hours you can arrange your day in whatever way "
        "suits you and your team, provided your manager knows your usual pattern.",
    ),
    (
        "p",
        "If you regularly need to work outside these hours, for example to support customers "
        "in other time zones, speak to your manager about an agreed on-call or shifted-hours "
        "arrangement. Shifted-hours arrangements are reviewed every six months.",
    ),
    ("h2", "Hybrid working"),
    (
        "p",
        "Most roles at Corvane are hybrid. You are expected to spend at least two days per "
        "week in your home office, and product and engineering teams share anchor days on "
        "Tuesday and Thursday so that planning sessions and reviews can happen in person. "
        "Customer support teams follow a separate rota published by their team lead each "
        "month.",
    ),
    (
        "p",
        "You may work remotely from another country for up to 20 working days in a calendar "
        "year. Requests must be raised as a Harbour ticket at least 15 working days before "
        "you travel, because People Operations needs to check tax and immigration rules for "
        "the destination. Working from a country on the restricted list is never permitted; "
        "the list is kept on the Harbour intranet.",
    ),
    ("h2", "Home office equipment"),
    (
        "p",
        "Every new employee receives a one-time home office allowance of £450, or the local "
        "equivalent of €520 in Porto and 2,300 złoty in Kraków. The allowance must be claimed "
        "within 90 days of your start date and can be spent on a desk, chair, monitor or "
        "lighting. Laptops, headsets and docking stations are provided separately by the IT "
        "Service Desk and remain company property.",
    ),
    ("h1", "Leave and Time Off"),
    (
        "p",
        "We want people to take proper breaks. The table below summarises the main types of "
        "leave available to employees on permanent contracts. Fixed-term employees receive "
        "the same entitlements pro rata to the length of their contract.",
    ),
    (
        "table",
        [
            ["Leave type", "Allowance", "Approved by", "Notes"],
            [
                "Annual leave",
                "27 days plus public holidays",
                "Line manager",
                "Pro rata for part-time staff; three days are held back for the winter closure",
            ],
            [
                "Sick leave",
                "Full pay for up to 20 days in any rolling 12 months",
                "Line manager",
                "Self-certify for up to 5 consecutive days; a fit note is needed from day 6",
            ],
            [
                "Parental leave (primary carer)",
                "26 weeks at full pay, then 13 weeks at statutory pay",
                "People Operations",
                "Available after 6 months of continuous service",
            ],
            [
                "Parental leave (secondary carer)",
                "6 weeks at full pay",
                "People Operations",
                "Can be taken in up to three separate blocks within the first year",
            ],
            [
                "Bereavement leave",
                "5 days for a close family member, 2 days for others",
                "Line manager",
                "Extra unpaid leave can be agreed for travel abroad",
            ],
            [
                "Volunteering leave",
                "3 days",
                "Line manager",
                "Must be used for a registered charity or community group",
            ],
            [
                "Study leave",
                "4 days plus exam days",
                "Head of department",
                "Linked to a qualification approved in your development plan",
            ],
            [
                "Jury service",
                "As required",
                "People Operations",
                "The company pays the difference between the court allowance and your salary",
            ],
        ],
    ),
    ("h2", "Booking and carrying over leave"),
    (
        "p",
        "Annual leave is booked through the Harbour portal and approved by your line manager. "
        "Requests for more than 10 consecutive working days need at least six weeks' notice, "
        "and we try to avoid more than half of any team being away at the same time.",
    ),
    (
        "p",
        "You may carry over up to 5 days of unused annual leave into the next holiday year, "
        "which runs from 1 January to 31 December. Carried-over days must be used by 31 "
        "March, after which they are lost. Days that could not be taken because of long-term "
        "sickness or parental leave are handled separately and are not subject to the 5-day "
        "limit.",
    ),
    ("h2", "Winter closure"),
    (
        "p",
        "All offices close from 24 December to 1 January inclusive. Public holidays in that "
        "period are given as normal, and three days of your annual leave allowance are "
        "reserved to cover the remaining working days. Teams that provide essential support "
        "during the closure, such as the on-call platform team, receive those days back as "
        "time off in lieu, to be taken before the end of February.",
    ),
    ("h1", "Pay, Expenses and Travel"),
    ("h2", "Pay"),
    (
        "p",
        "Salaries are paid monthly on the last working day of the month. Payslips are "
        "published on Harbour on the 25th of each month, or on the previous working day if "
        "the 25th falls at a weekend. Salary reviews take place once a year, and any changes "
        "take effect from 1 April.",
    ),
    ("h2", "Expenses"),
    (
        "p",
        "Business expenses are claimed through Corvane Ledger, our own product, within 60 "
        "days of the expense being incurred. Claims older than 60 days can only be paid with "
        "written approval from the Finance Director. An itemised receipt is required for any "
        "single item over £25.",
    ),
    (
        "p",
        "Claims are approved by your line manager. Any single claim above £1,000 also needs "
        "approval from the Finance Director, and claims for client entertainment must list "
        "the names of the guests and the business purpose.",
    ),
    ("h2", "Travel"),
    (
        "p",
        "Book all work travel through the travel desk at least 14 days before departure where "
        "possible. Rail travel is standard class, except for journeys longer than three "
        "hours, where first class may be booked if it costs no more than 20% above the "
        "standard fare. Flights shorter than five hours are economy; longer flights may be "
        "premium economy with approval from your director.",
    ),
    (
        "p",
        "Hotel costs are capped at £160 per night in London and £120 per night elsewhere in "
        "the UK, including breakfast. For trips abroad, use the rates in the travel desk's "
        "country table. The meal allowance while travelling is £35 per day and does not "
        "cover alcohol.",
    ),
    ("h1", "Learning and Development"),
    (
        "p",
        "Each employee has an individual learning budget of £1,200 per calendar year, which "
        "can be spent on courses, books, certifications and conference tickets. Travel to "
        "conferences is paid from the team budget, not your learning budget. Unused learning "
        "budget does not roll over to the following year.",
    ),
    (
        "p",
        "New joiners are invited to the Compass mentoring programme after completing "
        "probation. Compass pairs you with a mentor from a different department for six "
        "months, and mentors receive two extra days of learning time each year in "
        "recognition of their contribution.",
    ),
    ("h1", "Health and Wellbeing"),
    (
        "p",
        "Private medical insurance is available from your first day and covers you, your "
        "partner and your children. The employee assistance programme offers confidential "
        "counselling and legal or financial advice by phone 24 hours a day, seven days a "
        "week. Eye tests are reimbursed up to £60 every two years, and we contribute up to "
        "£150 towards glasses required for screen work.",
    ),
    (
        "p",
        "Every office has trained mental health first aiders, whose names are listed on the "
        "noticeboard next to the kitchen. You can also speak to People Operations in "
        "confidence if you need a phased return to work after illness.",
    ),
    ("h1", "Conduct and Leaving"),
    ("h2", "Probation and notice periods"),
    (
        "p",
        "All new employees complete a six-month probation period. During probation either "
        "side can end employment with two weeks' notice. After probation the notice period "
        "is one month, rising to three months for employees at Grade 5 and above.",
    ),
    ("h2", "Gifts and hospitality"),
    (
        "p",
        "You must declare any gift or hospitality from a supplier or customer worth more than "
        "£50 in the gifts register within 5 working days of receiving it. Cash gifts and "
        "gift cards must always be refused, whatever their value.",
    ),
    ("h2", "Leaving Corvane"),
    (
        "p",
        "When you leave, your line manager arranges the return of your equipment on your last "
        "day. Unused annual leave is paid in your final salary, and any leave taken beyond "
        "your pro rata entitlement is deducted. Your Harbour account remains available for "
        "30 days after your last day so that you can download payslips and tax documents.",
    ),
    ("h1", "Frequently Asked Questions"),
    (
        "qa",
        "Can I buy additional days of annual leave?",
        "Yes. During the benefits window each November you can buy up to 5 extra days for "
        "the following year. The cost is deducted from your salary in equal instalments "
        "over 12 months.",
    ),
    (
        "qa",
        "Who do I contact if my payslip is wrong?",
        "Raise a Harbour ticket in the Pay queries category. Corrections are normally made "
        "in the next payroll run, but if you have been underpaid by more than £200 an "
        "emergency payment is made within 3 working days.",
    ),
    (
        "qa",
        "Can I bring my dog to the office?",
        "Only in Bristol, and only on Fridays. Dogs must be registered with the office "
        "manager in advance, and no more than four dogs are allowed on any one floor.",
    ),
    (
        "qa",
        "How does the referral bonus work?",
        "If you refer someone who is hired, you receive a bonus of £2,000 once they complete "
        "their probation. Referrals for roles at Grade 5 and above earn £3,500. Members of "
        "the hiring panel for the role are not eligible.",
    ),
    (
        "qa",
        "Do I have to use my learning budget before the end of the year?",
        "Yes, because unused budget does not carry over. Courses that start in January can "
        "be booked and paid for in December.",
    ),
]

SECURITY: list[tuple] = [
    ("title", "Corvane Systems Information Security Policy"),
    (
        "p",
        "Version 3.2. Effective 1 February 2024. Owner: Dalia Okonkwo-Hart, Chief "
        "Information Security Officer. Classification: Internal.",
    ),
    ("h1", "1. Purpose and Scope"),
    (
        "p",
        "This policy sets out the rules that protect the information Corvane Systems holds "
        "about its customers, its employees and its own business. It applies to every "
        "employee, contractor and temporary worker, and to every device, account and system "
        "used to handle company information, whether it is owned by Corvane or not.",
    ),
    (
        "p",
        "The policy is reviewed at least once a year by the Security Steering Group, which "
        "meets on the second Wednesday of every quarter. Changes are announced in the company "
        "newsletter and on the Harbour intranet, and staff are asked to confirm that they "
        "have read the updated version within 30 days.",
    ),
    ("h1", "2. Roles and Responsibilities"),
    (
        "p",
        "The Chief Information Security Officer (CISO) owns this policy and is accountable "
        "for the security programme. The Security Operations team monitors systems around "
        "the clock, investigates alerts and coordinates the response to incidents.",
    ),
    (
        "p",
        "Each engineering team nominates a Security Champion, who spends around 10 percent of "
        "their time on security reviews, threat modelling and keeping the team's "
        "dependencies up to date. Champions meet the Security Operations team every "
        "fortnight.",
    ),
    (
        "p",
        "Line managers make sure that the people in their team complete training, have the "
        "right access for their role, and return equipment when they leave. Every employee "
        "is responsible for following this policy and for reporting anything that looks "
        "wrong, even if they are unsure.",
    ),
    ("h1", "3. Data Classification"),
    (
        "p",
        "All information must be given one of four classification levels: Public, Internal, "
        "Confidential or Restricted. The owner of a document or data set chooses the level "
        "when it is created and reviews it if the content changes.",
    ),
    (
        "p",
        "Public information has been approved for release, such as marketing material and "
        "published documentation. Internal information is for employees and contractors "
        "only, such as the staff directory and team plans. Confidential information would "
        "cause harm if disclosed, including customer contracts, salary data and unreleased "
        "product plans.",
    ),
    (
        "p",
        "Restricted information is the most sensitive category and includes customer payment "
        "card data, production encryption keys and identity documents. Restricted data must "
        "never be stored on laptops, removable media or personal devices, and may only be "
        "processed inside the production environment or the approved secure file vault.",
    ),
    (
        "p",
        "Confidential and Restricted documents sent outside the company must be shared "
        "through the secure file vault, with links set to expire after no more than 14 "
        "days. Email attachments must not be used for Restricted data under any "
        "circumstances.",
    ),
    ("h1", "4. Access Control"),
    (
        "p",
        "Access is granted on the principle of least privilege: people receive only the "
        "access they need for their current role. Requests are made through the IT Service "
        "Desk and approved by the owner of the system concerned.",
    ),
    (
        "p",
        "Access rights are reviewed every quarter by system owners. Any access that cannot be "
        "justified during the review is removed within 5 working days. When someone changes "
        "role, access that belonged to the previous role is removed at the same time as the "
        "new access is granted.",
    ),
    (
        "p",
        "Administrative access to production systems is only available through the Gatehouse "
        "bastion service, using just-in-time grants that expire automatically after a "
        "maximum of 4 hours. Every Gatehouse session is recorded, and the recordings are kept "
        "for 12 months.",
    ),
    (
        "p",
        "When an employee leaves, their accounts are disabled within 2 hours of the end of "
        "their final working day. In the case of a dismissal, accounts are disabled before "
        "the employee is informed.",
    ),
    ("h1", "5. Passwords and Authentication"),
    (
        "p",
        "Passwords must be at least 14 characters long. We recommend passphrases made of "
        "several unrelated words. Passwords must not be reused across systems and must be "
        "stored in the company password manager, never in browsers, documents or notes.",
    ),
    (
        "p",
        "Passwords do not need to be changed on a fixed schedule, but they must be changed "
        "immediately if there is any suspicion that they have been exposed. Multi-factor "
        "authentication is required for all company accounts, and access to production "
        "systems and the finance platform requires a hardware security key rather than a "
        "phone-based code.",
    ),
    ("h1", "6. Device Security"),
    (
        "p",
        "Only company-managed laptops may be used to access Confidential or Restricted "
        "information. Company laptops are enrolled in device management, use full-disk "
        "encryption and lock the screen automatically after 5 minutes of inactivity.",
    ),
    (
        "p",
        "Operating system and browser updates must be installed within 14 days of release. "
        "Updates that the Security Operations team marks as critical must be installed within "
        "72 hours, and devices that fall behind are blocked from company systems until they "
        "are updated.",
    ),
    (
        "p",
        "Personal phones may be used for email and chat if they are enrolled in the company's "
        "mobile management profile, which allows the work data on the phone to be wiped "
        "remotely. Personal laptops and tablets may not be used for company work.",
    ),
    (
        "p",
        "A lost or stolen device must be reported to the Security Operations desk within 1 "
        "hour of discovering the loss, by phone on extension 4400 or from any colleague's "
        "device. Do not wait until you have searched everywhere: a device that turns up "
        "later can easily be re-enabled.",
    ),
    ("h1", "7. Acceptable Use"),
    (
        "p",
        "Company systems are provided for business use. Reasonable personal use, such as "
        "reading the news during a break, is allowed as long as it does not interfere with "
        "work or break any other rule in this policy.",
    ),
    (
        "p",
        "Company information must not be stored in personal cloud storage, personal email "
        "accounts or messaging apps that are not approved by IT. Software may only be "
        "installed from the company software catalogue, and requests for new tools are "
        "assessed by the IT Service Desk within 10 working days.",
    ),
    (
        "p",
        "Confidential or Restricted information must not be entered into external AI "
        "assistants, chatbots or translation services unless the tool has been approved by "
        "the AI Review Board. The list of approved tools, and the data classes each tool may "
        "receive, is published on the Harbour intranet.",
    ),
    ("h1", "8. Incident Reporting and Response"),
    (
        "p",
        "A security incident is any event that could affect the confidentiality, integrity or "
        "availability of company or customer information. Examples include a phishing email "
        "that someone clicked, a misdirected email containing customer data, malware "
        "warnings and unexpected requests for access.",
    ),
    (
        "p",
        "Report suspected incidents immediately in the sec-incidents chat channel or by email "
        "to security@corvane.example. If you cannot reach anyone, call the Security "
        "Operations desk on extension 4400. Never try to investigate an incident yourself, "
        "for example by forwarding a suspicious attachment to colleagues.",
    ),
    (
        "p",
        "Incidents are classified into four severity levels, from SEV1 (critical) to SEV4 "
        "(low). A SEV1 incident, such as confirmed access to customer data by an "
        "unauthorised person, must be acknowledged by the on-call security engineer within "
        "15 minutes and is managed by an incident commander until it is closed.",
    ),
    (
        "p",
        "If an incident leads to a confirmed breach of personal data, affected customers are "
        "notified within 48 hours of confirmation and the relevant data protection authority "
        "within 72 hours. Every SEV1 and SEV2 incident is followed by a blameless review, "
        "which must be completed within 10 working days.",
    ),
    ("h1", "9. Suppliers and Third Parties"),
    (
        "p",
        "Before any supplier is given access to Confidential or Restricted data, it must "
        "complete the Corvane security questionnaire and be approved by the Security "
        "Operations team. Suppliers are rated as low, medium or high risk according to the "
        "data they handle.",
    ),
    (
        "p",
        "High-risk suppliers are reassessed every 12 months and medium-risk suppliers every "
        "24 months. Contracts with suppliers that process personal data must include a data "
        "processing agreement and give Corvane the right to audit their controls.",
    ),
    ("h1", "10. Backups and Business Continuity"),
    (
        "p",
        "Production databases are backed up every 6 hours, and backups are retained for 35 "
        "days in a separate cloud region. Backups are encrypted with keys that are held in a "
        "different account from the production systems.",
    ),
    (
        "p",
        "A restore test is carried out every month on a randomly selected database, and the "
        "result is recorded in the continuity log. Our recovery targets for Corvane Ledger "
        "are a recovery point objective of 6 hours and a recovery time objective of 4 hours. "
        "A full disaster recovery exercise takes place every year in October.",
    ),
    ("h1", "11. Security Awareness Training"),
    (
        "p",
        "All new starters must complete the security awareness course within 30 days of "
        "joining, and everyone must repeat it every year. Engineers also complete a secure "
        "development module covering common web application vulnerabilities.",
    ),
    (
        "p",
        "Simulated phishing emails are sent to all staff every quarter. Anyone who clicks a "
        "link in two simulations within 12 months is asked to attend a 45-minute refresher "
        "session with the Security Operations team. Results are reported to managers only as "
        "team totals, never as individual names.",
    ),
    ("h1", "12. Exceptions and Enforcement"),
    (
        "p",
        "If a business need cannot be met without breaking this policy, an exception may be "
        "requested from the CISO. Approved exceptions are recorded in the risk register, "
        "must include compensating controls, and last for a maximum of 6 months before they "
        "must be renewed or closed.",
    ),
    (
        "p",
        "Breaches of this policy may lead to disciplinary action, up to and including "
        "dismissal, and in serious cases may be reported to the police. Honest mistakes that "
        "are reported promptly are treated as learning opportunities.",
    ),
    ("h1", "13. Document Control"),
    (
        "p",
        "Version 3.2 replaces version 3.1, dated 6 March 2023. The main changes are the new "
        "rules on external AI assistants in section 7, the shorter time for disabling the "
        "accounts of leavers in section 4, and the requirement for hardware security keys on "
        "the finance platform in section 5.",
    ),
]

PRODUCT_FAQ = """\
# Corvane Ledger: Frequently Asked Questions

Corvane Ledger is a cloud application for managing employee expenses, receipts and supplier invoices. This FAQ answers the questions our support team hears most often. It was last updated for Ledger 4.4 in May 2024.

## Getting started

### How long is the free trial?

Every new workspace starts with a 21-day free trial of the Team plan. No payment card is needed to start a trial. At the end of the trial the workspace becomes read-only until a plan is chosen, and trial data is kept for 60 days before it is deleted.

### Which plans are available?

Ledger is sold in three plans:

- Starter: £9 per user per month, for up to 10 users, with receipt capture and a single approval step.
- Team: £19 per user per month, with multi-step approvals, accounting integrations and mileage tracking.
- Enterprise: priced per contract, adding single sign-on, an audit log, custom data retention and a named customer success manager.

Paying annually instead of monthly gives a 15% discount on every plan.

### How do I invite my colleagues?

Workspace administrators can invite users from Settings, then People. You can paste up to 100 email addresses at once or upload a CSV file with name, email and manager columns. Invitations expire after 7 days and can be resent at any time.

## Receipts and expenses

### Which file types can I upload?

Receipts can be uploaded as JPEG, PNG, HEIC or PDF files of up to 20 MB each. A multi-page PDF is treated as a single receipt unless you choose to split it during upload.

### Which currencies does receipt scanning recognise?

The receipt scanner reads amounts in 14 currencies, including pound sterling, euro, US dollar, Polish złoty and Swiss franc. Amounts in other currencies can be entered manually, and Ledger converts them using the European Central Bank reference rate for the date on the receipt.

### How is mileage calculated?

Administrators set a mileage rate per vehicle type in Settings, then Policies. The default rates are 45p per mile for cars for the first 10,000 business miles in a tax year and 25p per mile after that. Journeys are calculated from the route entered in the mobile app, or you can type the distance manually.

## Approvals

### How many approval steps can a workflow have?

On the Team and Enterprise plans an approval workflow can have up to 5 steps. Each step can be assigned to a named person, to the claimant's manager, or to a group in which any one member can approve.

### Can approvals happen automatically?

Yes. Administrators can set an auto-approval limit so that claims below a chosen amount, with a valid receipt and no policy warnings, are approved without human review. Auto-approved claims are still listed in the monthly audit report.

### What happens to my approvals while I am on holiday?

Approvers can set a delegate in their profile for a date range. During that time new approval requests go to the delegate, and requests that have waited more than 3 working days are escalated to the next step automatically.

## Integrations

Ledger connects to several accounting packages:

- Xero and QuickBooks Online, synchronised every 30 minutes
- Sage Business Cloud, synchronised every 2 hours
- Any other system through a CSV export or the REST API

Bank feeds for company cards are available on the Enterprise plan and are imported once a day at 06:00 UK time.

## Mobile app

### Does the mobile app work offline?

Yes. Receipts captured without a connection are stored on the phone in encrypted form and uploaded automatically when the phone is back online. Offline receipts are kept for up to 14 days; after that the app asks you to connect before you capture more.

### Which phones and languages are supported?

The iOS app needs iOS 16 or later, and the Android app needs Android 10 or later. Tablets work, but the layout is designed for phones.

The web and mobile apps are available in 9 languages: English, French, German, Spanish, Portuguese, Italian, Dutch, Polish and Swedish. Each user chooses a language under Profile, then Preferences.

## Security and data

### Where is my data stored?

Customers choose a data region when they create a workspace. Workspaces are hosted either in the EU region in Frankfurt or in the UK region in London, and the region cannot be changed after creation without a migration project carried out by our support team.

### How is my data protected?

All data is encrypted in transit with TLS 1.2 or later and at rest with AES-256. Ledger holds ISO 27001 certification and has an annual SOC 2 Type II report, which Enterprise customers can request through their customer success manager.

### What happens when we close our workspace?

When a workspace is closed, its data remains recoverable for 30 days. After 30 days all data, including receipt images, is permanently deleted from our systems, and from backups within a further 35 days.

### Can I export all of our data?

Administrators can request a full export from Settings, then Data. The export contains claims, invoices and audit events as CSV files, plus every receipt image in its original format, and a download link is emailed within 24 hours. The link stays valid for 7 days.

## Billing

Invoices are issued in pounds sterling, euros or US dollars. If you downgrade your plan, the change takes effect at the end of your current billing period, and features that are not part of the new plan become unavailable from that date. Refunds are not given for partial months.

## Support

### How do I contact support?

Support is available by chat and email from 08:00 to 18:00 UK time, Monday to Friday, excluding UK public holidays. Enterprise customers also have 24/7 phone support for priority 1 issues, with a guaranteed response within 1 hour.

### A receipt has been stuck in Processing for a long time. What should I do?

Most receipts are processed in under a minute. If a receipt is still shown as Processing after 10 minutes, delete it and upload it again from the web app. If the problem continues, check the service status page, then contact support with the receipt reference shown in the receipt details panel.
"""

# Release notes: (heading, [ (subheading or None, [items]) ]) plus free paragraphs.
RELEASE_INTRO = [
    "This file lists the changes in each release of the Corvane Ledger web and mobile apps, "
    "newest first. Web releases are rolled out to 10% of workspaces first and reach all "
    "workspaces within 48 hours. Mobile app versions can appear in the app stores up to a "
    "week after the matching web release.",
    "Version numbers follow the pattern major.minor.patch. Patch releases contain only "
    "fixes, minor releases add features and may change behaviour, and major releases can "
    "remove features after the deprecation period announced in these notes.",
    "Questions about a release can be sent to support through the in-app chat. Changes to "
    "the REST API are also announced on the developer portal at least 90 days before they "
    "take effect.",
]

RELEASES: list[tuple[str, list[tuple[str, list[str]]]]] = [
    (
        "Version 4.4.1 (14 May 2024)",
        [
            (
                "Fixes",
                [
                    "Fixed a problem where mileage claims over 1,000 miles were rounded down to the "
                    "nearest whole mile instead of to two decimal places.",
                    "Fixed the approval reminder email being sent twice to delegates.",
                    "The receipts list now loads correctly in workspaces that hold more than 50,000 receipts.",
                ],
            ),
        ],
    ),
    (
        "Version 4.4.0 (30 April 2024)",
        [
            (
                "New features",
                [
                    "Bulk approval: approvers can now approve up to 200 claims at once from the "
                    "Approvals page, as long as none of the claims has a policy warning.",
                    "Polish language support in the web and mobile apps, bringing the number of "
                    "interface languages to 9.",
                    "Sage Business Cloud integration for the Team and Enterprise plans, synchronised every 2 hours.",
                ],
            ),
            (
                "Changes",
                [
                    "The minimum supported iOS version is now iOS 16. Devices on older versions can "
                    "continue to use the web app in a browser.",
                    "Auto-approval limits can now be set per department as well as per workspace.",
                    "The full data export now includes audit events as a separate CSV file.",
                ],
            ),
            (
                "Deprecations",
                [
                    "Version 2 of the REST API is deprecated and will be switched off on 30 September "
                    "2024. Integrations must move to version 3 before that date; a migration guide is "
                    "linked from the developer portal.",
                ],
            ),
        ],
    ),
    (
        "Version 4.3.1 (19 March 2024)",
        [
            (
                "Fixes",
                [
                    "Fixed the camera preview appearing rotated on Android 12 devices when capturing "
                    "receipts in landscape orientation.",
                    "Receipt totals with a thousands separator in Swiss franc format, such as "
                    "1'250.00, are now read correctly by the scanner.",
                ],
            ),
        ],
    ),
    (
        "Version 4.3.0 (12 March 2024)",
        [
            (
                "New features",
                [
                    "HEIC receipt images taken on iPhones can now be uploaded directly, without "
                    "converting them to JPEG first.",
                    "Approvers can set a delegate for a date range while they are away. Requests "
                    "waiting longer than 3 working days are escalated to the next approval step.",
                    "The receipt scanner now recognises Swiss franc and Czech koruna, bringing the "
                    "number of supported currencies to 14.",
                ],
            ),
            (
                "Fixes",
                [
                    "CSV exports now use the date format set for the workspace instead of always using the US format.",
                ],
            ),
            (
                "Known issues",
                [
                    "On Android 12 the camera preview may appear rotated when capturing landscape "
                    "receipts. The captured image itself is saved correctly.",
                ],
            ),
        ],
    ),
    (
        "Version 4.2.2 (6 February 2024)",
        [
            (
                "Security",
                [
                    "Web sessions now expire after 12 hours of inactivity, down from 24 hours.",
                    "Workspace administrators on the Enterprise plan can require hardware security keys for sign-in.",
                ],
            ),
            (
                "Fixes",
                [
                    "Fixed an issue where invoices from suppliers with an apostrophe in their name "
                    "could not be exported to Xero.",
                ],
            ),
        ],
    ),
    (
        "Version 4.2.1 (23 January 2024)",
        [
            (
                "Fixes",
                [
                    "Fixed duplicate notifications when a claim was returned to the claimant for changes.",
                    "Receipts captured offline on Android are no longer uploaded twice when the connection returns.",
                ],
            ),
            (
                "Changes",
                [
                    "Receipts captured offline are now kept on the device for up to 14 days instead of 7.",
                ],
            ),
        ],
    ),
    (
        "Version 4.2.0 (9 January 2024)",
        [
            (
                "New features",
                [
                    "GPS mileage tracking in the mobile app records the route of a journey and "
                    "calculates the distance automatically.",
                    "A data region, London or Frankfurt, is now chosen when a workspace is created.",
                    "Expense policies can flag claims made on weekends or public holidays for extra review.",
                ],
            ),
            (
                "Changes",
                [
                    "The monthly audit report now includes auto-approved claims.",
                ],
            ),
        ],
    ),
]

RELEASE_OUTRO = [
    "Older releases are listed in the release archive on the developer portal. Version 3.x "
    "of the mobile apps stopped receiving updates on 31 December 2023.",
]

PERSIAN: list[tuple] = [
    ("title", "آیین‌نامه مرخصی کارکنان شرکت فناوری کاوان‌داده"),
    (
        "p",
        "این آیین‌نامه از اول فروردین ۱۴۰۳ اجرا می‌شود و برای همه کارکنان تمام‌وقت و "
        "پاره‌وقت شرکت در دفترهای تهران و اصفهان معتبر است. مسئولیت به‌روزرسانی آن با واحد "
        "منابع انسانی است و هر تغییری دست‌کم یک ماه پیش از اجرا به اطلاع کارکنان می‌رسد.",
    ),
    ("h1", "مرخصی استحقاقی"),
    (
        "p",
        "هر کارمند تمام‌وقت در سال ۲۶ روز کاری مرخصی استحقاقی با حقوق دارد. درخواست مرخصی "
        "باید دست‌کم ۷ روز پیش از شروع آن در سامانه «پرگار» ثبت شود و به تأیید مدیر مستقیم "
        "برسد. مرخصی کارکنان پاره‌وقت به نسبت ساعات کارشان محاسبه می‌شود.",
    ),
    (
        "p",
        "حداکثر ۹ روز از مرخصی استفاده‌نشده را می‌توان به سال بعد منتقل کرد. مانده مرخصی در "
        "پایان سال به‌صورت نقدی پرداخت نمی‌شود، مگر در زمان پایان همکاری.",
    ),
    ("h1", "مرخصی استعلاجی"),
    (
        "p",
        "کارمند می‌تواند تا ۳ روز مرخصی استعلاجی بدون گواهی پزشک بگیرد. برای مرخصی بیش از "
        "۳ روز، گواهی پزشک باید حداکثر ظرف ۴۸ ساعت پس از بازگشت به کار در سامانه پرگار "
        "بارگذاری شود.",
    ),
    ("h1", "مرخصی‌های ویژه"),
    ("h2", "ازدواج و فوت بستگان"),
    (
        "p",
        "برای ازدواج کارمند و همچنین فوت همسر، پدر، مادر یا فرزند، ۳ روز مرخصی با حقوق داده "
        "می‌شود. این مرخصی از مرخصی استحقاقی سالانه کسر نمی‌شود.",
    ),
    ("h2", "زایمان و مرخصی پدران"),
    (
        "p",
        "مرخصی زایمان مادران ۹ ماه با حقوق کامل است. پدران می‌توانند در ماه اول پس از تولد "
        "فرزند، ۱۴ روز مرخصی با حقوق بگیرند که از مرخصی استحقاقی آنان کسر نمی‌شود.",
    ),
    ("h2", "مرخصی ساعتی"),
    (
        "p",
        "مرخصی ساعتی در ساعات کاری مجاز است و هر ۸ ساعت آن یک روز مرخصی استحقاقی حساب "
        "می‌شود. سقف مرخصی ساعتی ۱۲ ساعت در ماه است و درخواست آن باید پیش از ساعت ۱۰ صبح "
        "همان روز ثبت شود.",
    ),
    ("h1", "پرسش‌های متداول"),
    ("p", "سوال: اگر در روزهای مرخصی بیمار شوم، چه می‌شود؟"),
    (
        "p",
        "پاسخ: در صورت ارائه گواهی پزشک، روزهای بیماری به مرخصی استعلاجی تبدیل می‌شوند و از "
        "مرخصی استحقاقی شما کسر نمی‌شوند.",
    ),
    ("p", "سوال: آیا پیش از پایان دوره آزمایشی می‌توانم مرخصی استحقاقی بگیرم؟"),
    (
        "p",
        "پاسخ: در سه ماه اول همکاری فقط تا ۴ روز مرخصی استحقاقی قابل استفاده است. پس از "
        "پایان دوره آزمایشی، محدودیتی جز مانده مرخصی شما وجود ندارد.",
    ),
    ("p", "سوال: درخواست مرخصی من رد شده است؛ به چه کسی مراجعه کنم؟"),
    (
        "p",
        "پاسخ: ابتدا با مدیر مستقیم خود گفت‌وگو کنید. اگر مشکل حل نشد، می‌توانید ظرف ۵ روز "
        "کاری درخواست بازبینی را از طریق سامانه پرگار برای واحد منابع انسانی بفرستید.",
    ),
]


# --------------------------------------------------------------------------------------
# Writers
# --------------------------------------------------------------------------------------


def _deterministic_zip(data: bytes) -> bytes:
    """Rewrite a zip (DOCX) with fixed member timestamps and order."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            new = zipfile.ZipInfo(info.filename, date_time=ZIP_DATE)
            new.compress_type = zipfile.ZIP_DEFLATED
            new.external_attr = 0o644 << 16
            dst.writestr(new, src.read(info.filename))
    return out.getvalue()


def _set_core_properties(doc, title: str, subject: str, author: str, language: str) -> None:
    cp = doc.core_properties
    cp.title = title
    cp.subject = subject
    cp.author = author
    cp.last_modified_by = author
    cp.language = language
    cp.keywords = "chunkbench sample corpus"
    cp.comments = "Fictional document written for the chunkbench sample corpus."
    cp.created = FIXED_DATE.replace(tzinfo=None)
    cp.modified = FIXED_DATE.replace(tzinfo=None)
    cp.last_printed = FIXED_DATE.replace(tzinfo=None)
    cp.revision = 1


def _make_rtl(paragraph) -> None:
    """Mark a python-docx paragraph and its runs as right-to-left."""
    from docx.oxml import OxmlElement

    ppr = paragraph._p.get_or_add_pPr()
    bidi = OxmlElement("w:bidi")
    ppr.insert(0, bidi)
    for run in paragraph.runs:
        rpr = run._r.get_or_add_rPr()
        rpr.append(OxmlElement("w:rtl"))


def write_docx(
    blocks: list[tuple], path: Path, *, title: str, subject: str, author: str, language: str, rtl: bool = False
) -> None:
    from docx import Document
    from docx.enum.text import WD_ALIGN_PARAGRAPH

    doc = Document()
    _set_core_properties(doc, title, subject, author, language)
    paragraphs = []
    for block in blocks:
        kind = block[0]
        if kind == "title":
            paragraphs.append(doc.add_paragraph(block[1], style="Title"))
        elif kind == "h1":
            paragraphs.append(doc.add_heading(block[1], level=1))
        elif kind == "h2":
            paragraphs.append(doc.add_heading(block[1], level=2))
        elif kind == "p":
            paragraphs.append(doc.add_paragraph(block[1]))
        elif kind == "qa":
            paragraphs.append(doc.add_paragraph("Q: " + block[1]))
            paragraphs.append(doc.add_paragraph("A: " + block[2]))
        elif kind == "table":
            rows = block[1]
            table = doc.add_table(rows=len(rows), cols=len(rows[0]))
            table.style = "Table Grid"
            for r, row in enumerate(rows):
                for c, text in enumerate(row):
                    cell = table.cell(r, c)
                    cell.text = text
                    if r == 0:
                        for run in cell.paragraphs[0].runs:
                            run.bold = True
        else:
            raise ValueError(kind)
    if rtl:
        for p in paragraphs:
            _make_rtl(p)
            p.alignment = WD_ALIGN_PARAGRAPH.RIGHT
    buf = io.BytesIO()
    doc.save(buf)
    path.write_bytes(_deterministic_zip(buf.getvalue()))


def write_security_pdf(blocks: list[tuple], path: Path) -> None:
    from fpdf import FPDF
    from fpdf.enums import XPos, YPos

    class PolicyPDF(FPDF):
        def footer(self) -> None:
            self.set_y(-15)
            self.set_font("Helvetica", "", 8)
            self.cell(
                0,
                10,
                f"Corvane Systems - Information Security Policy v3.2 - Internal - Page {self.page_no()} of {{nb}}",
                align="C",
            )

    pdf = PolicyPDF(format="A4")
    pdf.set_creation_date(FIXED_DATE)
    pdf.set_title("Information Security Policy")
    pdf.set_author("Corvane Systems")
    pdf.set_subject("Information security rules for all staff")
    pdf.set_creator("chunkbench samples/make_sample_corpus.py")
    pdf.set_producer("chunkbench")
    pdf.set_lang("en-GB")
    pdf.set_margins(22, 20, 22)
    pdf.set_auto_page_break(auto=True, margin=22)
    pdf.add_page()
    for kind, text in blocks:
        text.encode("latin-1")  # core fonts: Latin-1 only
        if kind == "title":
            pdf.set_font("Helvetica", "B", 18)
            pdf.multi_cell(0, 9, text, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
            pdf.ln(2)
        elif kind == "h1":
            if pdf.get_y() > pdf.h - 55:  # keep a heading with the start of its section
                pdf.add_page()
            else:
                pdf.ln(3)
            pdf.set_font("Helvetica", "B", 13)
            pdf.multi_cell(0, 7, text, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
            pdf.ln(1)
        elif kind == "p":
            pdf.set_font("Helvetica", "", 10.5)
            pdf.multi_cell(0, 5.2, text, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
            pdf.ln(2.5)
        else:
            raise ValueError(kind)
    pdf.output(str(path))


def release_notes_text() -> str:
    def wrap(text: str, indent: str = "", first: str | None = None) -> str:
        return textwrap.fill(
            text,
            width=78,
            initial_indent=first if first is not None else indent,
            subsequent_indent=indent,
            break_on_hyphens=False,
            break_long_words=False,
        )

    title = "CORVANE LEDGER RELEASE NOTES"
    out = [title, "=" * len(title), ""]
    for para in RELEASE_INTRO:
        out += [wrap(para), ""]
    for heading, sections in RELEASES:
        out += [heading, "-" * len(heading), ""]
        for sub, items in sections:
            out.append(sub)
            for item in items:
                out.append(wrap(item, indent="    ", first="  - "))
            out.append("")
    for para in RELEASE_OUTRO:
        out += [wrap(para), ""]
    return "\n".join(out).rstrip("\n") + "\n"


def generate() -> None:
    CORPUS_DIR.mkdir(parents=True, exist_ok=True)
    write_docx(
        HANDBOOK,
        CORPUS_DIR / "employee_handbook.docx",
        title="Employee Handbook",
        subject="How we work at Corvane Systems",
        author="Corvane Systems People Operations",
        language="en-GB",
    )
    write_security_pdf(SECURITY, CORPUS_DIR / "security_policy.pdf")
    (CORPUS_DIR / "product_faq.md").write_text(PRODUCT_FAQ, encoding="utf-8", newline="\n")
    (CORPUS_DIR / "release_notes.txt").write_text(release_notes_text(), encoding="utf-8", newline="\n")
    write_docx(
        PERSIAN,
        CORPUS_DIR / "persian_leave_policy.docx",
        title="آیین‌نامه مرخصی کارکنان",
        subject="سیاست مرخصی شرکت فناوری کاوان‌داده",
        author="واحد منابع انسانی کاوان‌داده",
        language="fa-IR",
        rtl=True,
    )
    for p in sorted(CORPUS_DIR.iterdir()):
        print(f"wrote {p.relative_to(REPO)} ({p.stat().st_size} bytes)")


# --------------------------------------------------------------------------------------
# Check: every reference occurs exactly once, inside one paragraph-like unit
# --------------------------------------------------------------------------------------

_WS = re.compile(r"\s+")


def norm(text: str) -> str:
    return _WS.sub(" ", text).strip()


def _docx_units(path: Path) -> list[str]:
    """Paragraphs and table cells in body order."""
    from docx import Document
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    doc = Document(str(path))
    units: list[str] = []
    for item in doc.iter_inner_content():
        if isinstance(item, Paragraph):
            units.append(item.text)
        elif isinstance(item, Table):
            for row in item.rows:
                for cell in row.cells:
                    units.append(cell.text)
    return units


def _pdf_units(path: Path) -> list[str]:
    """One unit per page: a reference must not cross a page break (headers/footers)."""
    from pypdf import PdfReader

    return [page.extract_text() or "" for page in PdfReader(str(path)).pages]


_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def _text_units(path: Path) -> list[str]:
    """Blank-line separated blocks; headings and list items are units of their own."""
    raw = path.read_text(encoding="utf-8")
    units: list[str] = []
    for block in re.split(r"\n\s*\n", raw):
        current: list[str] = []
        for line in block.split("\n"):
            if line.startswith("#") or _LIST_ITEM.match(line) or re.fullmatch(r"[=-]{3,}", line):
                if current:
                    units.append(" ".join(current))
                current = [_LIST_ITEM.sub("", line)]
            else:
                current.append(line)
        if current:
            units.append(" ".join(current))
    return units


def document_units(path: Path) -> list[str]:
    suffix = path.suffix.lower()
    if suffix == ".docx":
        return _docx_units(path)
    if suffix == ".pdf":
        return _pdf_units(path)
    if suffix in (".md", ".txt"):
        return _text_units(path)
    raise ValueError(f"unsupported document type: {path}")


def word_count(path: Path) -> int:
    return len(norm(" ".join(document_units(path))).split())


def check() -> bool:
    data = json.loads(QUESTIONS_FILE.read_text(encoding="utf-8"))
    questions = data["questions"]
    problems: list[str] = []
    docs = sorted(p for p in CORPUS_DIR.iterdir() if p.is_file())
    units = {p.name: [norm(u) for u in document_units(p)] for p in docs}
    full = {name: " \n ".join(us) for name, us in units.items()}
    full = {name: norm(t) for name, t in full.items()}

    ids = [q["id"] for q in questions]
    if len(ids) != len(set(ids)):
        problems.append("duplicate question ids")
    if not 24 <= len(questions) <= 30:
        problems.append(f"{len(questions)} questions, expected 24-30")
    required = {"id", "question", "expected_answer", "category", "difficulty", "references"}
    used_docs: set[str] = set()
    n_refs = 0
    for q in questions:
        missing = required - q.keys()
        if missing:
            problems.append(f"{q.get('id')}: missing keys {sorted(missing)}")
            continue
        if q["difficulty"] not in ("easy", "medium", "hard"):
            problems.append(f"{q['id']}: bad difficulty {q['difficulty']!r}")
        if not q["references"]:
            problems.append(f"{q['id']}: no references")
        for ref in q["references"]:
            n_refs += 1
            doc = ref["document"]
            used_docs.add(doc)
            content = norm(ref["content"])
            if doc not in full:
                problems.append(f"{q['id']}: unknown document {doc}")
                continue
            if not 40 <= len(content) <= 300:
                problems.append(f"{q['id']}: reference length {len(content)} outside 40-300")
            count = full[doc].count(content)
            in_units = sum(1 for u in units[doc] if content in u)
            if count != 1:
                problems.append(f"{q['id']}: found {count}x in {doc}: {content[:60]!r}")
            elif in_units != 1:
                problems.append(f"{q['id']}: not inside a single paragraph/cell/page of {doc}: {content[:60]!r}")
            elif doc == "security_policy.pdf" and not any(content in norm(b[1]) for b in SECURITY):
                # a PDF page holds many paragraphs: also check against the source paragraphs
                problems.append(f"{q['id']}: not inside a single source paragraph: {content[:60]!r}")
    for name in full:
        if name not in used_docs:
            problems.append(f"no question refers to {name}")

    for name in sorted(full):
        print(f"{name}: {word_count(CORPUS_DIR / name)} words, {len(units[name])} units")
    print(f"{len(questions)} questions, {n_refs} references, {len(used_docs)} documents")
    for p in problems:
        print("FAIL", p)
    if not problems:
        print("OK: every reference occurs exactly once, inside one paragraph/cell/page")
    return not problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only verify the sample questions")
    parser.add_argument("--all", action="store_true", help="write the corpus, then check")
    args = parser.parse_args(argv)
    if not args.check:
        generate()
    if args.check or args.all:
        return 0 if check() else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
